import * as z from 'zod/v4';
import { LOG_LEVELS } from '../config/config.js';
import { OrchestratorHealthService } from '../health/orchestrator-health.service.js';
import { SettingsService } from '../settings/settings.service.js';
import { DefinitionService } from '../stacks/definition/definition.service.js';
import * as def from './schemas/definitions.js';
import * as out from './schemas/orchestrator.js';
import { defineTool, READ_ONLY, type McpTool } from './tool.js';

/**
 * The orchestrator's own tools: health and info, definition validation, runtime settings. Each
 * calls the method its HTTP route calls, with that route's scope.
 */
export function orchestratorTools(
  orchestrator: OrchestratorHealthService,
  definitions: DefinitionService,
  settings: SettingsService,
): McpTool[] {
  return [
    defineTool({
      name: 'get_orchestrator_health',
      title: 'Orchestrator health',
      description:
        'Whether the service can work: status healthy, degraded (a check other than the database fails) or unhealthy (the database fails), version, uptime, and each check (database, grpc, workers) as ok or a word saying why not.',
      // The HTTP route is public; any token that opens /mcp may read it.
      scope: null,
      input: {},
      output: out.health,
      annotations: READ_ONLY,
      run: () => orchestrator.health(),
    }),
    defineTool({
      name: 'get_orchestrator_info',
      title: 'Orchestrator info',
      description:
        'What this instance is: name, version, API versions, start time and uptime, the agent endpoint (host:port agents connect to) and the CA fingerprint an agent can pin.',
      scope: 'orchestrator:read',
      input: {},
      output: out.info,
      annotations: READ_ONLY,
      run: () => Promise.resolve(orchestrator.info()),
    }),
    defineTool({
      name: 'validate_stack_definition',
      title: 'Validate a stack definition',
      description:
        'Checks a stack definition file (YAML) without storing anything. Valid: answers the stackkit, variant, services in dependency order and warnings. Not valid: a tool error, 400 invalid_yaml with the line and column, or 422 validation_failed with one entry per problem (path, category, message, line, column).',
      scope: 'orchestrator:read',
      input: def.definitionWithOptions,
      output: def.validationSummary,
      annotations: READ_ONLY,
      run: (args) => Promise.resolve(definitions.validate(def.toolDefinitionRequest(args))),
    }),
    defineTool({
      name: 'get_settings',
      title: 'Runtime settings',
      description:
        'The runtime settings of this instance: the current log level and when it was last changed (null while the configured default applies).',
      scope: 'orchestrator:read',
      input: {},
      output: out.settings,
      annotations: READ_ONLY,
      run: () => Promise.resolve(settings.get()),
    }),
    defineTool({
      name: 'set_log_level',
      title: 'Set the log level',
      description:
        "Sets the service's log level at once, on every replica within the settings refresh interval, and keeps it across restarts; answers the settings. Only the operator owner's admins may (403 otherwise).",
      scope: 'admin',
      input: {
        // The same values and message as UpdateSettingsDto.
        log_level: z
          .enum(LOG_LEVELS, { error: `log_level must be one of ${LOG_LEVELS.join(', ')}` })
          .describe('trace and debug are verbose; info is the usual level'),
      },
      output: out.settings,
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
      run: ({ log_level }, caller) => settings.update(caller, { log_level }),
    }),
  ];
}
