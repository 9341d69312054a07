import { z } from 'zod';

// An owner's webhook and console sign-in links.
// Part of the agent-facing HTTP API v1: shared/api.ts re-exports every resource's file.

/** Path parameter naming an owner (a principal id). */
export const OwnerParam = z.strictObject({
  owner_id: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/)
    .meta({ examples: ['prn_local_owner'] }),
});

/**
 * An owner's webhook (issue 15), set by an operator: where "approval needed", "sign-in needed"
 * and "run ended" are posted (http or https), and the secret (32-256 characters) their
 * `X-Webhook-Signature` is made with: `t=<ms>,v1=<hex HMAC-SHA256 of "<ms>.<body>">`.
 */
export const OwnerWebhookBody = z
  .strictObject({
    url: z
      .string()
      .max(2048)
      .regex(/^https?:\/\/[^\s]+$/, 'an http or https URL'),
    secret: z.string().min(32).max(256),
  })
  .meta({ examples: [{ url: 'https://hooks.example/owner-7', secret: 'a-long-random-secret-of-at-least-32-characters' }] });

export type OwnerWebhookBody = z.infer<typeof OwnerWebhookBody>;

/** An owner's webhook as the API shows it: never its secret. */
export const OwnerWebhookView = z.strictObject({ owner_id: z.string(), url: z.string(), updated_at: z.string() });

/** A one-time sign-in link to the owner's console (`POST /console/links`): its URL and expiry (ISO 8601). */
export const ConsoleLinkView = z.strictObject({ url: z.string(), expires_at: z.string() });

export type ConsoleLinkView = z.infer<typeof ConsoleLinkView>;
