import type { Principal } from '../auth/principal.ts';
import type { Ports } from '../ports.ts';

/** Hono context variables: ports built per request, the request id and the caller. */
export interface AppEnv {
  Variables: {
    ports: Ports;
    requestId: string;
    principal: Principal;
    /** The proposal route counted this proposal already (its body was not JSON); unset elsewhere. */
    proposalAdmitted?: boolean;
  };
}
