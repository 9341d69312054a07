import type { ArtifactRow } from '../db/schema.ts';
import type { Picture } from './pages.ts';

/** A kept screenshot as the console shows it. */
export function pictureOf(row: ArtifactRow | undefined): Picture | undefined {
  return row === undefined ? undefined : { id: row.id, width: row.width, height: row.height, box: row.box ?? null };
}
