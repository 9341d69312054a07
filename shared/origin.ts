import { z } from 'zod';

/** An origin as the browser reports it: `scheme://host[:port]`, http or https only. */
export const Origin = z
  .string()
  .max(255)
  .regex(/^https?:\/\/[A-Za-z0-9.-]+(:[0-9]{1,5})?$/, 'an http(s) origin such as https://example.com or http://127.0.0.1:8080');
export type Origin = z.infer<typeof Origin>;
