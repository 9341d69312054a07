CREATE TABLE `ceremony_events` (
	`event_id` text PRIMARY KEY NOT NULL,
	`ceremony_id` text NOT NULL,
	`host_id` text NOT NULL,
	`host_profile_id` text NOT NULL,
	`origin` text NOT NULL,
	`generation` integer NOT NULL,
	`outcome` text NOT NULL,
	`method` text NOT NULL,
	`account_sha256` text,
	`decided_at` integer NOT NULL,
	`received_at` integer NOT NULL,
	`via` text NOT NULL,
	`applied` integer DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE INDEX `ceremony_events_ceremony_idx` ON `ceremony_events` (`ceremony_id`);--> statement-breakpoint
CREATE TABLE `notices` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`kind` text NOT NULL,
	`episode_id` text NOT NULL,
	`run_id` text NOT NULL,
	`text` text NOT NULL,
	`created_at` integer NOT NULL,
	`resolved_at` integer,
	FOREIGN KEY (`episode_id`) REFERENCES `sign_in_episodes`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `notices_episode_id_unique` ON `notices` (`episode_id`);--> statement-breakpoint
CREATE INDEX `notices_owner_idx` ON `notices` (`owner_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `profile_bindings` (
	`owner_id` text NOT NULL,
	`profile_id` text NOT NULL,
	`host_profile_id` text NOT NULL,
	`state` text NOT NULL,
	`revoked_at` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `profile_bindings_owner_profile` ON `profile_bindings` (`owner_id`,`profile_id`);--> statement-breakpoint
CREATE TABLE `sign_in_episodes` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`profile_id` text NOT NULL,
	`host_profile_id` text NOT NULL,
	`origin` text NOT NULL,
	`generation` integer NOT NULL,
	`ceremony_id` text NOT NULL,
	`state` text NOT NULL,
	`question` text NOT NULL,
	`sign_in_url` text NOT NULL,
	`protected_url` text NOT NULL,
	`ceremony_state` text,
	`resolved_by` text,
	`opened_at` integer NOT NULL,
	`resolved_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sign_in_episodes_ceremony_id_unique` ON `sign_in_episodes` (`ceremony_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `sign_in_episodes_one_open` ON `sign_in_episodes` (`owner_id`,`profile_id`,`origin`) WHERE state = 'open';--> statement-breakpoint
CREATE INDEX `sign_in_episodes_state_idx` ON `sign_in_episodes` (`state`);--> statement-breakpoint
CREATE TABLE `sign_in_waits` (
	`id` text PRIMARY KEY NOT NULL,
	`run_id` text NOT NULL,
	`episode_id` text NOT NULL,
	`owner_id` text NOT NULL,
	`host_profile_id` text NOT NULL,
	`origin` text NOT NULL,
	`question` text NOT NULL,
	`generation` integer NOT NULL,
	`tool_call_id` text NOT NULL,
	`state` text NOT NULL,
	`fence_reason` text,
	`resolved_by` text,
	`created_at` integer NOT NULL,
	`ended_at` integer,
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`episode_id`) REFERENCES `sign_in_episodes`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sign_in_waits_one_pending_per_run` ON `sign_in_waits` (`run_id`) WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX `sign_in_waits_episode_idx` ON `sign_in_waits` (`episode_id`,`state`);--> statement-breakpoint
ALTER TABLE `runs` ADD `sign_in_attempts` integer DEFAULT 0 NOT NULL;