#!/usr/bin/env node
// Writes src/server/openapi/contract-schemas.json: one JSON Schema (2020-12, the dialect of OpenAPI
// 3.1) per exported interface and type alias of src/contracts/api, read with the TypeScript
// compiler. The contracts stay the one place a wire shape is written (docs/api.md, "OpenAPI").
// `node scripts/contract-schemas.mjs --check` exits 1 when the committed file is out of date.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import ts from 'typescript';

const root = resolve(import.meta.dirname, '..');
const contractsDir = join(root, 'src/contracts/api');
const output = join(root, 'src/server/openapi/contract-schemas.json');

export function contractSchemas() {
  const files = readdirSync(contractsDir)
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.spec.ts') && name !== 'index.ts')
    .map((name) => join(contractsDir, name));
  const program = ts.createProgram(files, {
    strict: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2023,
    noEmit: true,
  });
  const checker = program.getTypeChecker();

  /** Every non-generic exported declaration, by its symbol: these become components. */
  const named = new Map();
  const declarations = [];
  for (const file of files) {
    const source = program.getSourceFile(file);
    for (const statement of source.statements) {
      if (!ts.isInterfaceDeclaration(statement) && !ts.isTypeAliasDeclaration(statement)) continue;
      const exported = statement.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
      if (!exported || statement.typeParameters?.length) continue;
      const name = statement.name.text;
      if (named.has(name)) throw new Error(`two contracts named ${name}`);
      named.set(name, statement);
      declarations.push(statement);
    }
  }

  const describe = (symbol) => ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim();
  const tag = (node, tagName) =>
    ts
      .getJSDocTags(node)
      .find((t) => t.tagName.text === tagName)
      ?.comment?.toString()
      .trim();

  /** A reference to a component when the node names one (without type arguments). */
  const refOf = (node) => {
    if (!ts.isTypeReferenceNode(node) || node.typeArguments?.length) return undefined;
    const name = ts.isIdentifier(node.typeName) ? node.typeName.text : undefined;
    if (!name || !named.has(name)) return undefined;
    const symbol = checker.getSymbolAtLocation(node.typeName);
    const target = symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    const declaration = target?.declarations?.[0];
    return declaration === named.get(name) ? { $ref: `#/components/schemas/${name}` } : undefined;
  };

  /** From the syntax first, so that `JobStatus | null` keeps its reference. */
  const fromNode = (node) => {
    const ref = refOf(node);
    if (ref) return ref;
    if (ts.isParenthesizedTypeNode(node)) return fromNode(node.type);
    if (ts.isUnionTypeNode(node)) return union(node.types.map((member) => ({ node: member })));
    if (ts.isArrayTypeNode(node)) return { type: 'array', items: fromNode(node.elementType) };
    if (ts.isTypeLiteralNode(node) || ts.isTypeReferenceNode(node) || ts.isIntersectionTypeNode(node))
      return fromType(checker.getTypeFromTypeNode(node));
    return fromType(checker.getTypeFromTypeNode(node));
  };

  const literal = (type) => {
    if (type.flags & ts.TypeFlags.StringLiteral) return { kind: 'string', value: type.value };
    if (type.flags & ts.TypeFlags.NumberLiteral) return { kind: 'number', value: type.value };
    if (type.flags & ts.TypeFlags.BooleanLiteral)
      return { kind: 'boolean', value: checker.typeToString(type) === 'true' };
    return undefined;
  };

  /** Members given as nodes or types; literals of one kind become an enum, null joins the type. */
  const union = (members) => {
    const schemas = [];
    const literals = new Map();
    let nullable = false;
    const add = (member) => {
      if (
        member.node &&
        ts.isLiteralTypeNode(member.node) &&
        member.node.literal.kind === ts.SyntaxKind.NullKeyword
      ) {
        nullable = true;
        return;
      }
      if (member.node && !refOf(member.node) && ts.isUnionTypeNode(member.node)) {
        for (const inner of member.node.types) add({ node: inner });
        return;
      }
      const type = member.type ?? (refOf(member.node) ? undefined : checker.getTypeFromTypeNode(member.node));
      if (type && type.flags & ts.TypeFlags.Null) {
        nullable = true;
        return;
      }
      if (type && type.flags & ts.TypeFlags.Undefined) return;
      const lit = type && literal(type);
      if (lit) {
        if (!literals.has(lit.kind)) literals.set(lit.kind, []);
        literals.get(lit.kind).push(lit.value);
        return;
      }
      schemas.push(member.node ? fromNode(member.node) : fromType(type));
    };
    for (const member of members) add(member);
    for (const [kind, values] of literals) {
      if (kind === 'boolean' && values.length === 2) schemas.push({ type: 'boolean' });
      else if (values.length === 1) schemas.push({ type: kind, const: values[0] });
      else schemas.push({ type: kind, enum: values });
    }
    if (nullable) {
      if (schemas.length === 1 && typeof schemas[0].type === 'string' && !schemas[0].const) {
        const [only] = schemas;
        const nullableEnum = only.enum ? { enum: [...only.enum, null] } : {};
        return { ...only, type: [only.type, 'null'], ...nullableEnum };
      }
      schemas.push({ type: 'null' });
    }
    return schemas.length === 1 ? schemas[0] : { anyOf: schemas };
  };

  /** A component for a type the checker resolved (a list page's items, say). */
  const refOfType = (type) => {
    const symbol = type.aliasSymbol && !type.aliasTypeArguments?.length ? type.aliasSymbol : type.symbol;
    const declaration = symbol?.declarations?.[0];
    if (!declaration || named.get(symbol.name) !== declaration || symbol.name === describing)
      return undefined;
    return { $ref: `#/components/schemas/${symbol.name}` };
  };

  const fromType = (type) => {
    const ref = refOfType(type);
    if (ref) return ref;
    const lit = literal(type);
    if (lit) return { type: lit.kind, const: lit.value };
    if (type.flags & ts.TypeFlags.String) return { type: 'string' };
    if (type.flags & ts.TypeFlags.Number) return { type: 'number' };
    if (type.flags & ts.TypeFlags.Boolean) return { type: 'boolean' };
    if (type.flags & ts.TypeFlags.Null) return { type: 'null' };
    if (type.flags & (ts.TypeFlags.Unknown | ts.TypeFlags.Any)) return {};
    if (type.isUnion()) return union(type.types.map((member) => ({ type: member })));
    if (checker.isArrayType(type))
      return { type: 'array', items: fromType(checker.getTypeArguments(type)[0]) };
    if (checker.isTupleType(type)) {
      const items = checker.getTypeArguments(type).map(fromType);
      if (items.length === 0) return { type: 'array', items: {}, maxItems: 0 };
      // `items` applies after the prefix only, which maxItems leaves empty; Spectral wants it present.
      return { type: 'array', prefixItems: items, items: {}, minItems: items.length, maxItems: items.length };
    }
    if (type.flags & ts.TypeFlags.Object || type.isIntersection()) return objectSchema(type);
    throw new Error(`cannot describe type ${checker.typeToString(type)}`);
  };

  /** A node naming a type parameter: the checker's instantiated type is the one to describe. */
  const generic = (node) => {
    if (ts.isTypeReferenceNode(node)) {
      const symbol = checker.getSymbolAtLocation(node.typeName);
      if (symbol && symbol.flags & ts.SymbolFlags.TypeParameter) return true;
    }
    return ts.forEachChild(node, (child) => (generic(child) ? true : undefined)) === true;
  };

  const objectSchema = (type) => {
    const properties = {};
    const required = [];
    for (const property of checker.getPropertiesOfType(type)) {
      const declaration = property.valueDeclaration ?? property.declarations?.[0];
      let schema;
      if (
        declaration &&
        ts.isPropertySignature(declaration) &&
        declaration.type &&
        !generic(declaration.type)
      ) {
        schema = fromNode(declaration.type);
      } else {
        schema = fromType(checker.getNonNullableType(checker.getTypeOfSymbol(property)));
      }
      const description = describe(property);
      properties[property.name] = description ? { ...schema, description } : schema;
      if (!(property.flags & ts.SymbolFlags.Optional)) required.push(property.name);
    }
    const schema = { type: 'object' };
    if (required.length) schema.required = required;
    if (Object.keys(properties).length) schema.properties = properties;
    const index = checker.getIndexInfosOfType(type).find((info) => info.keyType.flags & ts.TypeFlags.String);
    schema.additionalProperties = index ? fromType(index.type) : false;
    return schema;
  };

  const schemas = {};
  /** The component being written: its own alias is not a reference to itself. */
  let describing;
  for (const declaration of declarations.sort((a, b) => a.name.text.localeCompare(b.name.text))) {
    describing = declaration.name.text;
    const symbol = checker.getSymbolAtLocation(declaration.name);
    const schema = ts.isTypeAliasDeclaration(declaration)
      ? fromNode(declaration.type)
      : objectSchema(checker.getDeclaredTypeOfSymbol(symbol));
    const format = tag(declaration, 'format');
    if (format) schema.format = format;
    const description = describe(symbol);
    schemas[declaration.name.text] = description ? { ...schema, description } : schema;
  }
  return schemas;
}

const isMain = process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename);
if (isMain) {
  const schemas = contractSchemas();
  if (process.argv.includes('--check')) {
    const committed = JSON.parse(readFileSync(output, 'utf8'));
    if (!isDeepStrictEqual(committed, schemas)) {
      console.error(`${output} is out of date: run node scripts/contract-schemas.mjs`);
      process.exit(1);
    }
  } else {
    writeFileSync(output, `${JSON.stringify(schemas, null, 2)}\n`);
  }
}
