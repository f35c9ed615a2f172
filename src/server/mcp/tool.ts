import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
  type ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '@nestjs/common';
import * as z from 'zod/v4';
import { insufficientScope } from '../auth/auth.errors.js';
import { hasScope, type Scope } from '../auth/scopes.js';
import { AppError, NotFoundError, ValidationFailedError } from '../common/app-error.js';
import type { Caller } from '../common/request-context.js';
import type { ProblemFieldError } from '../../contracts/api/problem.js';
import { isDataException, isDatabaseUnavailable } from '../database/database-errors.js';

/**
 * One MCP tool: a thin call into the feature service its HTTP route calls, with that route's scope.
 * `input` and `output` are zod shapes; `run` answers the route's JSON (typed against `output`, so a
 * view that no longer matches its schema does not compile).
 */
export interface McpTool<
  I extends z.ZodRawShape = z.ZodRawShape,
  O extends z.ZodRawShape = z.ZodRawShape,
  R extends Shaped<O> = Shaped<O>,
> {
  name: string;
  title: string;
  description: string;
  /** The scope of the HTTP route it mirrors; null for what any valid token may read (orchestrator health). */
  scope: Scope | null;
  input: I;
  output: O;
  annotations: Omit<ToolAnnotations, 'title'>;
  run(args: z.output<z.ZodObject<I>>, caller: Caller): Promise<R>;
}

type Shaped<O extends z.ZodRawShape> = z.input<z.ZodObject<O>>;

/** Fields the answer has that its output schema does not describe (a client would reject them). */
type Undescribed<O extends z.ZodRawShape, R> = Exclude<keyof R, keyof Shaped<O>>;

/**
 * Checks a tool's types and returns it as is: the arguments `run` receives are the input schema's,
 * its answer must match the output schema, and the schema must name every field of the answer.
 */
export const defineTool = <I extends z.ZodRawShape, O extends z.ZodRawShape, R extends Shaped<O>>(
  tool: McpTool<I, O, R> &
    ([Undescribed<O, R>] extends [never] ? unknown : { undescribed: Undescribed<O, R> }),
): McpTool => tool;

/** Annotations of a tool that only reads this instance's own records. */
export const READ_ONLY: McpTool['annotations'] = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
};

/**
 * Every tool of the service, their JSON schemas computed once. Per request it serves `tools/list`
 * (only the tools the caller's scopes allow) and `tools/call` (arguments checked like an HTTP body,
 * refusals and service errors as tool errors with the problem's code; never a protocol failure).
 */
export class ToolRegistry {
  private readonly tools = new Map<string, { tool: McpTool; input: z.ZodObject; listed: Tool }>();

  constructor(
    tools: McpTool[],
    private readonly log: Logger,
  ) {
    for (const tool of tools) {
      if (this.tools.has(tool.name)) throw new Error(`MCP tool ${tool.name} is defined twice`);
      const input = z.strictObject(tool.input);
      const listed: Tool = {
        name: tool.name,
        title: tool.title,
        description: tool.description,
        inputSchema: jsonSchema(input, 'input'),
        outputSchema: jsonSchema(z.object(tool.output), 'output'),
        annotations: { title: tool.title, ...tool.annotations },
      };
      this.tools.set(tool.name, { tool, input, listed });
    }
  }

  names(): string[] {
    return [...this.tools.keys()];
  }

  /** Serves tools/list and tools/call on a per-request server for this caller. */
  serve(server: Server, caller: Caller): void {
    server.registerCapabilities({ tools: { listChanged: false } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [...this.tools.values()].filter(({ tool }) => may(caller, tool)).map(({ listed }) => listed),
    }));
    server.setRequestHandler(CallToolRequestSchema, (request) =>
      this.call(caller, request.params.name, request.params.arguments),
    );
  }

  async call(caller: Caller, name: string, args: unknown): Promise<CallToolResult> {
    return toolResult(this.log, name, async () => {
      const entry = this.tools.get(name);
      if (entry === undefined) throw new NotFoundError(`There is no tool named ${name}.`);
      const { tool, input } = entry;
      if (!may(caller, tool)) throw insufficientScope([tool.scope as Scope]);
      const parsed = input.safeParse(args ?? {});
      if (!parsed.success)
        throw new ValidationFailedError(fieldErrors(parsed.error), 'The arguments did not pass validation.');
      return tool.run(parsed.data, caller);
    });
  }
}

const may = (caller: Caller, tool: McpTool): boolean =>
  tool.scope === null || hasScope(caller.scopes, tool.scope);

function jsonSchema(schema: z.ZodObject, io: 'input' | 'output'): Tool['inputSchema'] {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { target: 'draft-7', io }) as Record<
    string,
    unknown
  >;
  return rest as Tool['inputSchema'];
}

/** zod's issues as the problem's field errors, paths as the HTTP validation writes them (`a.b.0`). */
function fieldErrors(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.map((issue) => ({
    path: issue.path.length === 0 ? '(arguments)' : issue.path.join('.'),
    message: issue.message,
  }));
}

/**
 * A service answer as a tool result: the JSON as structured content and as text. A coded error is
 * a tool error carrying the problem (status, code, title, detail, errors); anything else is logged
 * and answered as the HTTP problem filter would (400, 503 or a bare 500), with no detail from inside.
 */
export async function toolResult(
  log: Logger,
  name: string,
  call: () => Promise<object>,
): Promise<CallToolResult> {
  try {
    const value = await call();
    return {
      content: [{ type: 'text', text: JSON.stringify(value) }],
      structuredContent: value as Record<string, unknown>,
    };
  } catch (err) {
    return { isError: true, content: [{ type: 'text', text: JSON.stringify(problemOf(log, name, err)) }] };
  }
}

/** The problem an error is answered with: a coded one as it is, anything else as {@link uncodedProblem}. */
export function problemOf(log: Logger, name: string, err: unknown): Problem {
  return err instanceof AppError
    ? {
        status: err.status,
        code: err.code,
        title: err.title,
        detail: err.message,
        errors: err.errors,
        ...(err instanceof ValidationFailedError && err.warnings ? { warnings: err.warnings } : {}),
      }
    : uncodedProblem(log, name, err);
}

export interface Problem {
  status: number;
  code: string;
  title: string;
  detail: string;
  errors?: ProblemFieldError[];
  warnings?: ProblemFieldError[];
}

/** What the HTTP problem filter answers for an error that is not a coded one. */
function uncodedProblem(log: Logger, name: string, err: unknown): Problem {
  if (isDataException(err))
    return {
      status: 400,
      code: 'bad_request',
      title: 'Bad Request',
      detail: 'A value in the arguments is not valid for its field.',
    };
  if (isDatabaseUnavailable(err)) {
    log.warn({ err, tool: name }, 'database unavailable');
    return {
      status: 503,
      code: 'unavailable',
      title: 'Service Unavailable',
      detail: 'The service cannot reach its database right now; retry shortly.',
    };
  }
  log.error({ err, tool: name }, 'MCP tool failed');
  return {
    status: 500,
    code: 'internal',
    title: 'Internal Server Error',
    detail: 'The tool failed; the service log has the cause.',
  };
}
