import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const PROTO = fileURLToPath(new URL('./agent.proto', import.meta.url));
const TYPES = fileURLToPath(new URL('./index.ts', import.meta.url));
const PACKAGE = 'stack.agent.v1';

interface FieldDescriptor {
  name: string;
  type: string;
  typeName: string;
}
interface MessageDescriptor {
  type: { field: FieldDescriptor[]; oneofDecl: { name: string }[] };
}

/**
 * The TypeScript shapes in index.ts are written by hand beside agent.proto: this reads both (the
 * .proto with proto-loader, the shapes with the TypeScript compiler) and holds them to the same
 * fields, message by message from the stream's roots, so the two cannot drift apart unnoticed.
 */
describe('agent protocol types', () => {
  const definition = protoLoader.loadSync(PROTO, { keepCase: true, oneofs: true }) as unknown as Record<
    string,
    MessageDescriptor
  >;
  const program = ts.createProgram([TYPES], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2023,
    strict: true,
    skipLibCheck: true,
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(TYPES)!;
  const declared = new Map<string, ts.InterfaceDeclaration>();
  source.forEachChild((node) => {
    if (ts.isInterfaceDeclaration(node)) declared.set(node.name.text, node);
  });

  /** Strips null and undefined, and unwraps arrays: the type a message field's values have. */
  const valueType = (type: ts.Type): ts.Type => {
    const bare = checker.getNonNullableType(type);
    return checker.isArrayType(bare) ? checker.getTypeArguments(bare as ts.TypeReference)[0] : bare;
  };

  function compare(message: string, type: ts.Type, seen: Set<string>, problems: string[]): void {
    seen.add(message);
    const descriptor = definition[`${PACKAGE}.${message}`];
    const protoFields = [
      ...descriptor.type.field.map((f) => f.name),
      ...descriptor.type.oneofDecl.map((o) => o.name),
    ].sort();
    const tsFields = type
      .getProperties()
      .map((p) => p.name)
      .sort();
    if (JSON.stringify(protoFields) !== JSON.stringify(tsFields)) {
      problems.push(`${message}: proto has ${protoFields.join(',')}; TypeScript has ${tsFields.join(',')}`);
    }
    for (const field of descriptor.type.field) {
      if (field.type !== 'TYPE_MESSAGE' || !definition[`${PACKAGE}.${field.typeName}`]) continue; // maps
      const property = type.getProperty(field.name);
      if (!property) continue;
      compare(field.typeName, valueType(checker.getTypeOfSymbolAtLocation(property, source)), seen, problems);
    }
  }

  it('index.ts mirrors every message of agent.proto, field for field', () => {
    const problems: string[] = [];
    const seen = new Set<string>();
    for (const root of [
      'AgentMessage',
      'ServerMessage',
      'RenewCertificateRequest',
      'RenewCertificateResponse',
    ]) {
      compare(root, checker.getTypeAtLocation(declared.get(root)!), seen, problems);
    }
    expect(problems).toEqual([]);
    const messages = Object.keys(definition)
      .filter((name) => name.startsWith(`${PACKAGE}.`) && 'type' in definition[name])
      .map((name) => name.slice(PACKAGE.length + 1))
      .filter((name) => !('service' in (definition[`${PACKAGE}.${name}`] as object)))
      .sort();
    expect([...seen].sort()).toEqual(messages.filter((m) => m !== 'AgentGateway'));
  });
});
