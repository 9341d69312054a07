import { getTableColumns, type SQL, type SQLWrapper, sql } from 'drizzle-orm';
import type { SQLiteTable } from 'drizzle-orm/sqlite-core';

/** A column's value in an INSERT ... SELECT: a bound parameter, or an SQL expression or column of the SELECT. */
type SelectedValue = SQLWrapper | string | number | boolean | null;

/**
 * The selected fields of an `INSERT ... SELECT` into `table`, one per column in the table's order,
 * each named by its column's key (type-checked against the schema): drizzle's
 * `insert(table).select((qb) => qb.select(selectedRow(table, {...})).from(...).where(...).getSQL())`
 * writes the column list out in the table's order, so naming every value here means adding a
 * column can never shift a value into the wrong one. A column not named takes its schema
 * default, or NULL. Values are bound parameters unless they are SQL or a column of the SELECT.
 */
export function selectedRow<T extends SQLiteTable>(
  table: T,
  values: { [K in keyof T['$inferInsert']]?: SelectedValue },
): { [K in keyof T['$inferInsert']]: SQL } {
  const named = values as Record<string, SelectedValue | undefined>;
  const fields: Record<string, SQL> = {};
  for (const [key, column] of Object.entries(getTableColumns(table))) {
    const value = key in named ? named[key] : column.hasDefault && column.default !== undefined ? (column.default as SelectedValue) : null;
    fields[key] = sql`${value}`;
  }
  return fields as { [K in keyof T['$inferInsert']]: SQL };
}
