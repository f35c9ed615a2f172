import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AppError } from '../common/app-error.js';
import type { Scope } from '../auth/scopes.js';

/** Whether the caller's token holds a scope: a tool it may not call is not even listed. */
export type ToolScope = (scope: Scope) => boolean;

/**
 * A service answer as a tool result: the JSON as text and as structured content. A coded error is a
 * tool error carrying the problem's code and detail, never a protocol failure.
 */
export async function toolResult(call: () => Promise<object>): Promise<CallToolResult> {
  try {
    const value = await call();
    return {
      content: [{ type: 'text', text: JSON.stringify(value) }],
      structuredContent: value as Record<string, unknown>,
    };
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    const problem = {
      status: err.status,
      code: err.code,
      title: err.title,
      detail: err.message,
      errors: err.errors,
    };
    return { isError: true, content: [{ type: 'text', text: JSON.stringify(problem) }] };
  }
}
