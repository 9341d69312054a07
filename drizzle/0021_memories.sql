CREATE TABLE `anticipation_predictions` (
	`id` text PRIMARY KEY NOT NULL,
	`run_id` text NOT NULL,
	`owner_id` text NOT NULL,
	`position` integer NOT NULL,
	`memory_id` text,
	`statement` text NOT NULL,
	`verdict` text NOT NULL,
	`reason` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `anticipation_predictions_run_idx` ON `anticipation_predictions` (`run_id`,`position`);--> statement-breakpoint
CREATE TABLE `memories` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`statement` text NOT NULL,
	`source` text NOT NULL,
	`suggestion_id` text,
	`state` text NOT NULL,
	`revision` integer DEFAULT 1 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`retired_at` integer
);
--> statement-breakpoint
CREATE INDEX `memories_owner_idx` ON `memories` (`owner_id`,`state`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `memories_suggestion_idx` ON `memories` (`suggestion_id`);--> statement-breakpoint
CREATE TABLE `memory_evidence` (
	`id` text PRIMARY KEY NOT NULL,
	`provider` text NOT NULL,
	`policy_profile` text NOT NULL,
	`policy_version` integer NOT NULL,
	`policy_hash` text NOT NULL,
	`bundle` text NOT NULL,
	`published_by` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `memory_evidence_hash_idx` ON `memory_evidence` (`policy_hash`,`provider`);--> statement-breakpoint
CREATE TABLE `memory_suggestions` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`run_id` text NOT NULL,
	`proposed_by` text NOT NULL,
	`statement` text NOT NULL,
	`page_derived` integer NOT NULL,
	`state` text NOT NULL,
	`memory_id` text,
	`created_at` integer NOT NULL,
	`decided_at` integer
);
--> statement-breakpoint
CREATE INDEX `memory_suggestions_owner_idx` ON `memory_suggestions` (`owner_id`,`state`,`created_at`);--> statement-breakpoint
CREATE INDEX `memory_suggestions_run_idx` ON `memory_suggestions` (`run_id`);--> statement-breakpoint
CREATE TABLE `run_anticipations` (
	`run_id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`state` text NOT NULL,
	`reason` text,
	`message` text,
	`provider` text NOT NULL,
	`policy_profile` text NOT NULL,
	`policy_version` integer NOT NULL,
	`policy_hash` text NOT NULL,
	`provider_calls` integer NOT NULL,
	`cost_usd` real NOT NULL,
	`created_at` integer NOT NULL
);
