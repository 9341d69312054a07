CREATE TABLE `approvals` (
	`id` text PRIMARY KEY NOT NULL,
	`tool_call_id` text NOT NULL,
	`run_id` text NOT NULL,
	`owner_id` text NOT NULL,
	`state` text NOT NULL,
	`arguments_hash` text NOT NULL,
	`policy_hash` text NOT NULL,
	`decided_by` text,
	`decided_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`tool_call_id`) REFERENCES `tool_calls`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `approvals_tool_call_id_unique` ON `approvals` (`tool_call_id`);--> statement-breakpoint
CREATE INDEX `approvals_owner_state_idx` ON `approvals` (`owner_id`,`state`,`created_at`);--> statement-breakpoint
CREATE TABLE `effects` (
	`id` text PRIMARY KEY NOT NULL,
	`tool_call_id` text NOT NULL,
	`run_id` text NOT NULL,
	`state` text NOT NULL,
	`committed_at` integer NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`tool_call_id`) REFERENCES `tool_calls`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `effects_tool_call_id_unique` ON `effects` (`tool_call_id`);--> statement-breakpoint
CREATE TABLE `messages` (
	`id` text PRIMARY KEY NOT NULL,
	`run_id` text NOT NULL,
	`principal_id` text NOT NULL,
	`trust` text NOT NULL,
	`text` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `messages_run_idx` ON `messages` (`run_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `principals` (
	`id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`owner_id` text NOT NULL,
	`token_hash` text NOT NULL,
	`label` text DEFAULT '' NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `principals_token_hash_unique` ON `principals` (`token_hash`);--> statement-breakpoint
CREATE TABLE `runs` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`created_by` text NOT NULL,
	`claimed_by` text,
	`profile_id` text NOT NULL,
	`intent` text NOT NULL,
	`origins` text NOT NULL,
	`state` text NOT NULL,
	`deadline_at` integer NOT NULL,
	`lease_id` text,
	`lease_generation` integer,
	`latest_revision` integer,
	`report_summary` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `runs_owner_idx` ON `runs` (`owner_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `tool_calls` (
	`id` text PRIMARY KEY NOT NULL,
	`run_id` text NOT NULL,
	`principal_id` text NOT NULL,
	`tool` text NOT NULL,
	`version` text NOT NULL,
	`arguments` text NOT NULL,
	`arguments_hash` text NOT NULL,
	`state` text NOT NULL,
	`decision_effect` text,
	`decision_rule` text,
	`policy_hash` text,
	`result` text,
	`error_code` text,
	`error_message` text,
	`retryable` integer,
	`phases` text NOT NULL,
	`deadline_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `tool_calls_run_idx` ON `tool_calls` (`run_id`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `tool_calls_one_active_per_run` ON `tool_calls` (`run_id`) WHERE state IN ('waiting_for_approval', 'dispatching');