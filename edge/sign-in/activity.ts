import { asc, eq, inArray } from 'drizzle-orm';
import { ceremonyEvents, signInEpisodes, signInWaits } from '../db/schema.ts';
import type { Ports } from '../ports.ts';

/** Sign-in waits and ceremony events of a run, for its passive activity record. */
export async function signInActivity(ports: Ports, runId: string) {
  const waits = await ports.db.select().from(signInWaits).where(eq(signInWaits.runId, runId)).orderBy(asc(signInWaits.createdAt));
  const ceremonyIds = [
    ...new Set(
      (
        await Promise.all(
          [...new Set(waits.map((w) => w.episodeId))].map((id) =>
            ports.db.select({ c: signInEpisodes.ceremonyId }).from(signInEpisodes).where(eq(signInEpisodes.id, id)).get(),
          ),
        )
      ).flatMap((row) => (row ? [row.c] : [])),
    ),
  ];
  const events = ceremonyIds.length
    ? await ports.db.select().from(ceremonyEvents).where(inArray(ceremonyEvents.ceremonyId, ceremonyIds)).orderBy(asc(ceremonyEvents.receivedAt))
    : [];
  return { waits, events };
}
