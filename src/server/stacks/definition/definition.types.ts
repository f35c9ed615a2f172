/**
 * The normalized stack definition and its validation issues are part of the HTTP API (a revision's
 * `definition`, the validate endpoint's `warnings`): they are declared once in
 * src/contracts/api/stack-definition.ts. This file adds what only validation uses.
 */
import type { StackDefinition, ValidationIssue } from '../../../contracts/api/stack-definition.js';

export type {
  ContainerOptionsDefinition,
  DriverName,
  FileCredential,
  HealthCheckDefinition,
  MetricsDefinition,
  MonitoringDefinition,
  PortDefinition,
  PublicDefinition,
  RestartPolicy,
  ServiceDefinition,
  ServiceFileDefinition,
  StackDefinition,
  StackVolumeDefinition,
  StartCondition,
  StartConditionDefinition,
  VolumeMountDefinition,
  ValidationCategory,
  ValidationIssue,
} from '../../../contracts/api/stack-definition.js';

export interface YamlSyntaxError {
  message: string;
  line: number;
  column: number;
}

export type ValidationResult =
  | { kind: 'valid'; definition: StackDefinition; warnings: ValidationIssue[] }
  | { kind: 'invalid'; errors: ValidationIssue[]; warnings: ValidationIssue[] }
  | { kind: 'yaml_error'; error: YamlSyntaxError };
