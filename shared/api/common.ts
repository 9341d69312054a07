import { z } from 'zod';

// What every resource shares: the health answer and the id in a path.
// Part of the agent-facing HTTP API v1: shared/api.ts re-exports every resource's file.

export const HealthView = z.strictObject({
  status: z.literal('ok'),
  tools: z.record(z.string(), z.array(z.string())),
});

/** The id of the run, tool call, approval or grant a path names. */
export const IdParam = z.strictObject({
  id: z
    .string()
    .min(1)
    .max(64)
    .meta({
      examples: [
        'run_k3v9dq2m7xw4ahz5ty6e',
        'call_p2m7xw4ahz5ty6ek3v9d',
        'apr_xw4ahz5ty6ek3v9dq2m7',
        'grt_ahz5ty6ek3v9dq2m7xw4',
        'sie_5ty6ek3v9dq2m7xw4ahz',
        'hst_c8c0cc4a8f8725a65ae9',
      ],
    }),
});
