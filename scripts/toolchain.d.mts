/** Types of the plain-JS toolchain launcher's exports (scripts/toolchain.mjs). */
/** The Node release the project runs on when the machine's Node is older (also the container image's, deploy/host/Dockerfile). */
export const NODE_VERSION: string;
/** The oldest Node major the project supports. */
export const MIN_NODE_MAJOR: number;
/** Whether a Node version string (`20.20.2`, `v22.1.0`) is at least MIN_NODE_MAJOR. */
export function isSupportedNode(version: string): boolean;
/** Undefined when the running Node is supported, else the directory of the installed Node's binary. */
export function ensureToolchain(): string | undefined;
/** The environment the project's commands run in (PATH led by the toolchain's Node when needed). */
export function toolchainEnv(env?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
