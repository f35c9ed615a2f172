// The stack file editor: a plain textarea with a line-number gutter that marks the lines the
// service's validator complains about. Validation runs as you type (debounced) through the same
// route every client uses, POST .../unifier/validate.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, type ApiError } from './api.js';
import { asApiError } from './hooks.js';
import type { ProblemFieldError, ValidationIssue, ValidationSummary } from '../../src/contracts/api/index.js';

const DEBOUNCE_MS = 350;

type Issue = Pick<ProblemFieldError, 'path' | 'message'> & { line: number | null; column: number | null };

export interface ValidationState {
  pending: boolean;
  summary: ValidationSummary | undefined;
  error: ApiError | undefined;
}

export function useValidation(source: string): ValidationState {
  const [state, setState] = useState<ValidationState>({
    pending: false,
    summary: undefined,
    error: undefined,
  });
  useEffect(() => {
    if (source.trim() === '') {
      setState({ pending: false, summary: undefined, error: undefined });
      return;
    }
    let live = true;
    setState((s) => ({ ...s, pending: true }));
    const timer = setTimeout(() => {
      api.validate(source).then(
        (summary) => live && setState({ pending: false, summary, error: undefined }),
        (err) => live && setState({ pending: false, summary: undefined, error: asApiError(err) }),
      );
    }, DEBOUNCE_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [source]);
  return state;
}

function issuesOf(state: ValidationState): { errors: Issue[]; warnings: ValidationIssue[] } {
  const errors = (state.error?.problem.errors ?? []).map((e) => ({
    path: e.path,
    message: e.message,
    line: e.line ?? null,
    column: e.column ?? null,
  }));
  return { errors, warnings: state.summary?.warnings ?? [] };
}

export function YamlEditor({
  value,
  onInput,
  label,
}: {
  value: string;
  onInput: (value: string) => void;
  label: string;
}) {
  const area = useRef<HTMLTextAreaElement>(null);
  const gutter = useRef<HTMLDivElement>(null);
  const validation = useValidation(value);
  const { errors, warnings } = issuesOf(validation);
  const errorLines = new Set(errors.map((e) => e.line).filter((l): l is number => l !== null));
  const warningLines = new Set(warnings.map((w) => w.line).filter((l): l is number => l !== null));
  const lines = value.split('\n').length;

  const jump = (line: number | null, column: number | null) => {
    const el = area.current;
    if (!el || line === null) return;
    const rows = el.value.split('\n');
    let offset = 0;
    for (let i = 0; i < line - 1 && i < rows.length; i++) offset += rows[i].length + 1;
    offset += Math.max(0, (column ?? 1) - 1);
    el.focus();
    el.setSelectionRange(offset, offset);
  };

  return (
    <div class="editor-wrap">
      <div class="editor">
        <div class="gutter" ref={gutter} aria-hidden="true">
          {Array.from({ length: lines }, (_, i) => (
            <div
              key={i}
              class={errorLines.has(i + 1) ? 'gl error' : warningLines.has(i + 1) ? 'gl warning' : 'gl'}
              data-line={i + 1}
            >
              {i + 1}
            </div>
          ))}
        </div>
        <textarea
          ref={area}
          aria-label={label}
          spellcheck={false}
          autocapitalize="off"
          autocomplete="off"
          wrap="off"
          value={value}
          onInput={(e) => onInput((e.target as HTMLTextAreaElement).value)}
          onScroll={(e) => {
            if (gutter.current) gutter.current.scrollTop = (e.target as HTMLTextAreaElement).scrollTop;
          }}
        />
      </div>
      <div class="validation" aria-live="polite" data-testid="validation">
        {validation.pending && <p class="muted">Validating…</p>}
        {!validation.pending && validation.summary && (
          <p class="ok">
            Valid: {validation.summary.stackkit}/{validation.summary.variant}, services{' '}
            {validation.summary.services.join(', ')}
          </p>
        )}
        {!validation.pending && validation.error && (
          <div class="problem" role="alert">
            <strong>{validation.error.problem.title}</strong>
            {errors.length === 0 && <p>{validation.error.problem.detail}</p>}
            <ul class="issues">
              {errors.map((e, i) => (
                <li key={i}>
                  <button type="button" class="link" onClick={() => jump(e.line, e.column)}>
                    {e.line !== null ? `line ${e.line}, column ${e.column ?? 1}` : 'file'}
                  </button>
                  : {e.path && <code>{e.path}</code>} {e.message}
                </li>
              ))}
            </ul>
          </div>
        )}
        {warnings.length > 0 && (
          <ul class="issues warnings">
            {warnings.map((w, i) => (
              <li key={i}>
                <button type="button" class="link" onClick={() => jump(w.line, w.column)}>
                  {w.line !== null ? `line ${w.line}, column ${w.column ?? 1}` : 'file'}
                </button>
                : warning <code>{w.path}</code> {w.message}
              </li>
            ))}
          </ul>
        )}
      </div>
    </div>
  );
}
