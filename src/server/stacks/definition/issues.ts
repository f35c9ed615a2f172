import type { ValidationCategory, ValidationIssue } from './definition.types.js';
import type { Position } from './yaml-tree.js';

/** Problems reported per list (errors, warnings); a hostile file could otherwise make thousands. */
export const MAX_ISSUES = 200;

/** The problems one validation run finds, in the order the rules report them. */
export class Issues {
  readonly errors: ValidationIssue[] = [];
  readonly warnings: ValidationIssue[] = [];

  error(path: string, category: ValidationCategory, message: string, at: Position | null): void {
    this.errors.push({ path, category, message, line: at?.line ?? null, column: at?.column ?? null });
  }

  warn(path: string, message: string, at: Position | null): void {
    this.warnings.push({
      path,
      category: 'invalid_value',
      message,
      line: at?.line ?? null,
      column: at?.column ?? null,
    });
  }
}

const byPosition = (a: ValidationIssue, b: ValidationIssue): number =>
  (a.line ?? Infinity) - (b.line ?? Infinity) || (a.column ?? Infinity) - (b.column ?? Infinity);

/**
 * Sorted by position (stable: problems at one position keep the order they were reported in); past
 * {@link MAX_ISSUES}, one last item says how many more there are.
 */
export function capped(issues: ValidationIssue[], what: string): ValidationIssue[] {
  const sorted = [...issues].sort(byPosition);
  if (sorted.length <= MAX_ISSUES) return sorted;
  const rest = sorted.length - MAX_ISSUES;
  return [
    ...sorted.slice(0, MAX_ISSUES),
    {
      path: '',
      category: 'invalid_value',
      message: `${rest} more ${what} not listed; fix the ones above first`,
      line: null,
      column: null,
    },
  ];
}
