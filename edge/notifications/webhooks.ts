import { and, eq, isNotNull, isNull, lte, sql } from 'drizzle-orm';
import { newId } from '../db/ids.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { ownerWebhooks, type WebhookDeliveryRow, webhookDeliveries } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports, RunResult } from '../ports.ts';

/** What an owner is told about (issue 15). */
export type OwnerEvent = 'approval_needed' | 'sign_in_needed' | 'run_ended';

/** Waits before the 2nd, 3rd, ... attempt of a delivery, in ms; after the last, it is given up. */
export const RETRY_BACKOFF_MS = [30_000, 120_000, 600_000, 1_800_000, 7_200_000] as const;
/** How long one delivery attempt may take, in ms. */
const ATTEMPT_TIMEOUT_MS = 5_000;
/** Most due deliveries one maintenance pass retries. */
const RETRIES_PER_PASS = 20;

/**
 * Tells the owner about `event` through the webhook an operator set for them, if any, after the
 * request has answered (`ports.background`): the notification is put in the outbox
 * (`webhook_deliveries`) and a first attempt made at once; failed attempts are retried by the
 * cron pass with backoff ({@link RETRY_BACKOFF_MS}, six attempts in all). The body is
 * `{event, owner_id, at, console_url, ...fields}`: ids and states, never page content or text
 * to type (the console shows those to the signed-in owner). Never throws.
 */
export function notifyOwner(ports: Ports, ownerId: string, event: OwnerEvent, fields: Record<string, string>): void {
  ports.background(`notify owner ${ownerId} of ${event}`, async () => {
    const now = ports.clock.now();
    const id = newId('whd');
    const body = JSON.stringify({
      event,
      owner_id: ownerId,
      at: new Date(now).toISOString(),
      console_url: ports.config.publicUrl ? new URL('/console', ports.config.publicUrl).toString() : '/console',
      ...fields,
    });
    // Only for an owner with a webhook: the insert selects it.
    const queued = await ports.db.run(sql`
      insert into webhook_deliveries (id, owner_id, event, body, attempts, next_attempt_at, created_at)
      select ${id}, ${ownerId}, ${event}, ${body}, 0, ${now}, ${now} from owner_webhooks where owner_id = ${ownerId}`);
    if (rowsChanged(queued as RunResult) === 1) await attemptDelivery(ports, id);
  });
}

/**
 * `X-Webhook-Signature` of a body sent at `timestampMs`: `t=<ms>,v1=<hex HMAC-SHA256 of
 * "<ms>.<body>" with the owner's webhook secret>`. Receivers recompute it and compare.
 */
export async function webhookSignature(secret: string, timestampMs: number, body: string): Promise<string> {
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`${timestampMs}.${body}`)));
  return `t=${timestampMs},v1=${[...mac].map((byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * One attempt at delivery `id`, claimed first by a conditional update (due, not delivered), so
 * two passes never post it twice at once: a 2xx answer marks it delivered; anything else records
 * the error and schedules the next attempt, or gives up after the last.
 */
async function attemptDelivery(ports: Ports, id: string): Promise<void> {
  const now = ports.clock.now();
  const claimed = await ports.db
    .update(webhookDeliveries)
    .set({ attempts: sql`${webhookDeliveries.attempts} + 1`, nextAttemptAt: now + ATTEMPT_TIMEOUT_MS * 2 })
    .where(
      and(
        eq(webhookDeliveries.id, id),
        isNull(webhookDeliveries.deliveredAt),
        isNotNull(webhookDeliveries.nextAttemptAt),
        lte(webhookDeliveries.nextAttemptAt, now),
      ),
    )
    .returning();
  const delivery: WebhookDeliveryRow | undefined = claimed[0];
  if (delivery === undefined) return;
  const hook = await ports.db.select().from(ownerWebhooks).where(eq(ownerWebhooks.ownerId, delivery.ownerId)).get();
  let failure: string | undefined;
  if (hook === undefined) {
    failure = 'the owner has no webhook any more';
  } else {
    try {
      const response = await fetch(hook.url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'X-Webhook-Event': delivery.event,
          'X-Webhook-Delivery': delivery.id,
          'X-Webhook-Signature': await webhookSignature(hook.secret, now, delivery.body),
        },
        body: delivery.body,
        // The operator named this URL: a redirect elsewhere is a failure, not a new destination.
        redirect: 'manual',
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      });
      await response.body?.cancel().catch(() => {});
      if (!response.ok) failure = `HTTP ${response.status}`;
    } catch (error) {
      failure = error instanceof Error ? error.message.slice(0, 300) : String(error).slice(0, 300);
    }
  }
  const wait = RETRY_BACKOFF_MS[delivery.attempts - 1];
  await ports.db
    .update(webhookDeliveries)
    .set(
      failure === undefined
        ? { deliveredAt: ports.clock.now(), nextAttemptAt: null, lastError: null }
        : { lastError: failure, nextAttemptAt: hook === undefined || wait === undefined ? null : ports.clock.now() + wait },
    )
    .where(eq(webhookDeliveries.id, id));
}

/**
 * Retries the deliveries that are due (at most 20 per pass, oldest due first); the cron pass
 * calls it. Never throws for a failed delivery (it stays in the outbox with its error).
 * @returns how many were attempted.
 */
export async function retryDueDeliveries(ports: Ports): Promise<number> {
  const due = await ports.db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(and(isNull(webhookDeliveries.deliveredAt), isNotNull(webhookDeliveries.nextAttemptAt), lte(webhookDeliveries.nextAttemptAt, ports.clock.now())))
    .orderBy(webhookDeliveries.nextAttemptAt)
    .limit(RETRIES_PER_PASS);
  for (const { id } of due) await attemptDelivery(ports, id);
  return due.length;
}

/**
 * Sets (or replaces) the webhook of owner `ownerId`: `url` (http or https) and the `secret` its
 * signatures are made with. One upsert, which writes only for an existing owner principal.
 * @throws DomainError('not_found') when `ownerId` is no owner's id (nothing is written).
 */
export async function setOwnerWebhook(ports: Ports, ownerId: string, url: string, secret: string): Promise<void> {
  const now = ports.clock.now();
  const set = await ports.db.run(sql`
    insert into owner_webhooks (owner_id, url, secret, updated_at)
    select id, ${url}, ${secret}, ${now} from principals where id = ${ownerId} and kind = 'owner'
    on conflict (owner_id) do update set url = excluded.url, secret = excluded.secret, updated_at = excluded.updated_at`);
  if (rowsChanged(set as RunResult) !== 1) throw new DomainError('not_found', `no owner ${ownerId}`);
}
