import type { Observation } from '../../shared/observation.ts';
import type { WireDownload, WireScreenshot } from '../../shared/run-files.ts';
import { type ArtifactSource, keepDownloads, keepObservationScreenshot } from '../artifacts/run-artifacts.ts';
import type { Deadline } from '../deadline.ts';
import type { HostSession } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';

/**
 * The observation the agent gets, with what the page gave the run (issue 33): the viewport
 * screenshot the observe asked for (kept as an artifact; carried only when the observation is of
 * the revision it shows) and the downloads the host reported (each saved one read over the same
 * session and lease and kept, never opened). The host's wire forms never reach the agent.
 * Never throws: what cannot be kept is reported so (`failed`) or left out, and the call's outcome
 * stands (a write was sent either way).
 * @param screenshot the JPEG the command answered with and the revision it shows.
 */
export async function withPageFiles(
  ports: Ports,
  source: ArtifactSource,
  reach: { readonly session: HostSession; readonly leaseId: string; readonly deadline: Deadline },
  observation: Observation,
  screenshot: { readonly wire: WireScreenshot; readonly revision: number } | undefined,
  downloads: readonly WireDownload[],
): Promise<Observation> {
  if (screenshot === undefined && downloads.length === 0) return observation;
  try {
    const picture =
      screenshot !== undefined && screenshot.revision === observation.revision
        ? await keepObservationScreenshot(ports, source, screenshot.wire, screenshot.revision)
        : undefined;
    const observed = downloads.length > 0 ? await keepDownloads(ports, source, reach, downloads) : [];
    return { ...observation, ...(picture ? { screenshot: picture } : {}), ...(observed.length > 0 ? { downloads: observed.slice(0, 32) } : {}) };
  } catch (error) {
    console.error(`[${ports.requestId}] the page's files of call ${source.toolCallId} were not kept`, error);
    return observation;
  }
}
