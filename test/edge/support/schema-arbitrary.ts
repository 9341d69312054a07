import fc from 'fast-check';
import { z } from 'zod';

/**
 * fast-check arbitraries drawn from zod schemas, through their JSON Schema (`z.toJSONSchema`), so
 * the property tests generate exactly what the contracts describe, plus near misses. Covers what
 * the shared contracts use: objects (required and optional keys, no extras unless allowed),
 * strings (length bounds, patterns), integers and numbers (bounds), booleans, `const`, `enum`,
 * `oneOf` / `anyOf`, arrays and string-keyed records. Anything else becomes any JSON value.
 */

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  propertyNames?: JsonSchema;
  items?: JsonSchema;
  maxItems?: number;
  minItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  const?: unknown;
  enum?: unknown[];
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
};

/** Longest string generated, in characters: the bounds that matter are tested by hand. */
const MAX_GENERATED_CHARS = 64;

function stringOf(schema: JsonSchema): fc.Arbitrary<string> {
  if (schema.pattern !== undefined) {
    const pattern = new RegExp(schema.pattern);
    return fc
      .stringMatching(pattern)
      .filter((value) => value.length <= (schema.maxLength ?? Number.POSITIVE_INFINITY) && value.length >= (schema.minLength ?? 0));
  }
  const minLength = schema.minLength ?? 0;
  return fc.string({ minLength, maxLength: Math.max(minLength, Math.min(schema.maxLength ?? MAX_GENERATED_CHARS, MAX_GENERATED_CHARS)) });
}

function arbitraryOfJson(schema: JsonSchema, hints: Record<string, fc.Arbitrary<unknown>>, key?: string): fc.Arbitrary<unknown> {
  if (key !== undefined && hints[key] !== undefined) return hints[key]!;
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum !== undefined) return fc.constantFrom(...schema.enum);
  const alternatives = schema.oneOf ?? schema.anyOf;
  if (alternatives !== undefined) return fc.oneof(...alternatives.map((alternative) => arbitraryOfJson(alternative, hints)));
  switch (schema.type) {
    case 'string':
      return stringOf(schema);
    case 'integer':
      return fc.integer({
        min: Math.max(schema.minimum ?? -1_000_000, Number.MIN_SAFE_INTEGER),
        max: Math.min(schema.maximum ?? 1_000_000, Number.MAX_SAFE_INTEGER),
      });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(schema.items ? arbitraryOfJson(schema.items, hints) : fc.jsonValue(), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? 4, 4),
      });
    case 'object': {
      if (schema.properties === undefined) {
        const values = typeof schema.additionalProperties === 'object' ? arbitraryOfJson(schema.additionalProperties, hints) : fc.jsonValue();
        return fc.dictionary(schema.propertyNames ? stringOf(schema.propertyNames) : fc.string({ maxLength: 16 }), values, { maxKeys: 3 });
      }
      const required = new Set(schema.required ?? []);
      const shape = Object.fromEntries(Object.entries(schema.properties).map(([name, property]) => [name, arbitraryOfJson(property, hints, name)]));
      return fc.record(shape, { requiredKeys: [...required] });
    }
    default:
      return fc.jsonValue();
  }
}

/**
 * Values the schema accepts (mostly) and near misses: a value of `schema`'s JSON Schema, with
 * `hints` replacing the generator of any property of that name (e.g. `url`: URLs of interest).
 * Refinements a JSON Schema cannot say (zod `.refine`) are not respected, which makes near misses.
 */
export function arbitraryOf(schema: z.ZodType, hints: Record<string, fc.Arbitrary<unknown>> = {}): fc.Arbitrary<unknown> {
  return arbitraryOfJson(z.toJSONSchema(schema, { unrepresentable: 'any' }) as JsonSchema, hints);
}
