import type { SchemaObject } from '@nestjs/swagger';
import schemas from './contract-schemas.json' with { type: 'json' };

/**
 * The JSON Schemas of src/contracts/api, made from the TypeScript interfaces by
 * scripts/contract-schemas.mjs (contract-schemas.json; a unit test fails while it is out of date).
 */
export type ContractName = keyof typeof schemas;

/** A JSON Schema (2020-12, OpenAPI 3.1's dialect) as the generator writes them. */
export type JsonSchema = SchemaObject & {
  const?: unknown;
  prefixItems?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
};

export const CONTRACT_SCHEMAS = schemas as unknown as Record<ContractName, JsonSchema>;

export const contractRef = (name: ContractName): { $ref: string } => ({
  $ref: `#/components/schemas/${name}`,
});
