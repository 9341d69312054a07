import { z } from 'zod';
import { HostState } from '../fleet.ts';

// The fleet of browser hosts, for the operator (issue 32).
// Part of the HTTP API v1: shared/api.ts re-exports every resource's file.

/** A host of the fleet as the edge records it; figures are from its last good check. ISO-8601 instants. */
export const HostView = z.strictObject({
  /** The registry id (`hst_...`): what `phases.dispatch.host_id` and a run's placement name. */
  id: z.string(),
  url: z.string(),
  /** `config`: listed in `HOST_URLS`; `operator`: registered with `POST /v1/hosts`. */
  source: z.enum(['config', 'operator']),
  label: z.string(),
  state: HostState,
  /** The id the host announces in its signed hello (`HOST_ID`); null until it first answered. */
  reported_host_id: z.string().nullable(),
  version: z.string().nullable(),
  max_browsers: z.int().min(0),
  browsers: z.int().min(0),
  leases: z.int().min(0),
  ceremonies: z.int().min(0),
  /** Browser slots free by the edge's own records (leases, reservations and sign-in windows there). */
  free_slots: z.int(),
  /** Profiles placed on the host. */
  placements: z.int().min(0),
  failed_checks: z.int().min(0),
  last_error: z.string().nullable(),
  checked_at: z.string().nullable(),
  created_at: z.string(),
});
export type HostView = z.infer<typeof HostView>;

export const HostList = z.strictObject({ hosts: z.array(HostView) });
export type HostList = z.infer<typeof HostList>;

/** `POST /v1/hosts`: a host to add to the fleet by its wire URL. */
export const HostRegistration = z
  .strictObject({
    url: z.string().min(1).max(2048),
    label: z.string().max(200).optional(),
  })
  .meta({ examples: [{ url: 'wss://host-3.hosts.browsers.svc.cluster.local:8790', label: 'third host' }] });
export type HostRegistration = z.infer<typeof HostRegistration>;

/** `DELETE /v1/hosts/{id}`: removed, and how many profiles were placed there (they move on their next lease). */
export const HostRemoval = z.strictObject({ removed: z.literal(true), placements: z.int().min(0) });
export type HostRemoval = z.infer<typeof HostRemoval>;

/** A profile's placement, as a run shows it (issue 32): its host, the fencing generation, when and why it was placed there. */
export const PlacementView = z.strictObject({
  host_id: z.string(),
  generation: z.int().min(1),
  placed_at: z.string(),
  reason: z.enum(['first_lease', 'host_unreachable', 'host_draining', 'host_removed']),
  /** The host it moved from; null for a first placement. */
  previous_host_id: z.string().nullable(),
});
export type PlacementView = z.infer<typeof PlacementView>;
