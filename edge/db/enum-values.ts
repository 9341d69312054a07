/**
 * The values of a shared zod enum, as the non-empty tuple drizzle's text enums take, so a table's
 * column and the API's contract have one definition (the zod enum in shared/).
 */
export function valuesOf<T extends string>(schema: { readonly options: readonly T[] }): [T, ...T[]] {
  return schema.options as [T, ...T[]];
}
