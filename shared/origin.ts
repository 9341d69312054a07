import { z } from 'zod';

/** An origin as the browser reports it: `scheme://host[:port]`, http or https only. */
export const Origin = z
  .string()
  .max(255)
  .regex(/^https?:\/\/[A-Za-z0-9.-]+(:[0-9]{1,5})?$/, 'an http(s) origin such as https://example.com or http://127.0.0.1:8080')
  .refine(isCanonicalOrigin, 'an origin the URL parser accepts as it is (a valid host and a port up to 65535)');

/** True when the URL parser accepts `text` and gives back the same origin (modulo letter case). */
function isCanonicalOrigin(text: string): boolean {
  try {
    return new URL(text).origin === text.toLowerCase();
  } catch {
    return false;
  }
}
export type Origin = z.infer<typeof Origin>;
