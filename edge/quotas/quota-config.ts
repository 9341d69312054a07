/** The operator's limits (edge settings `QUOTA_*`); all counts, per rolling minute where named so. */
export interface QuotaConfig {
  /** Runs one agent may create per minute (`QUOTA_RUNS_PER_MINUTE_PER_AGENT`). */
  readonly runsPerMinutePerAgent: number;
  /** Runs all principals of one owner may create per minute (`QUOTA_RUNS_PER_MINUTE_PER_OWNER`). */
  readonly runsPerMinutePerOwner: number;
  /** Runs of one owner not yet ended (queued, running, waiting) (`QUOTA_OPEN_RUNS_PER_OWNER`). */
  readonly openRunsPerOwner: number;
  /** Proposals (stored rejections included) one agent may make per minute (`QUOTA_PROPOSALS_PER_MINUTE_PER_AGENT`). */
  readonly proposalsPerMinutePerAgent: number;
  /** Proposals on all runs of one owner per minute (`QUOTA_PROPOSALS_PER_MINUTE_PER_OWNER`). */
  readonly proposalsPerMinutePerOwner: number;
  /** Browsers one owner's runs may hold leased at once on the host (`QUOTA_LEASED_BROWSERS_PER_OWNER`). */
  readonly leasedBrowsersPerOwner: number;
}

/** Defaults: generous for one person's agents, and one owner never holds every browser of a three-browser host. */
export const DEFAULT_QUOTAS: QuotaConfig = {
  runsPerMinutePerAgent: 30,
  runsPerMinutePerOwner: 60,
  openRunsPerOwner: 100,
  proposalsPerMinutePerAgent: 300,
  proposalsPerMinutePerOwner: 600,
  leasedBrowsersPerOwner: 2,
};
