CREATE TABLE `grant_uses` (
	`tool_call_id` text PRIMARY KEY NOT NULL,
	`grant_id` text NOT NULL,
	`charged_at` integer NOT NULL,
	FOREIGN KEY (`tool_call_id`) REFERENCES `tool_calls`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`grant_id`) REFERENCES `grants`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `grants` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`tool` text NOT NULL,
	`actions` text,
	`origin` text NOT NULL,
	`max_uses` integer NOT NULL,
	`uses` integer DEFAULT 0 NOT NULL,
	`expires_at` integer NOT NULL,
	`policy_hash` text NOT NULL,
	`revoked_at` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `grants_owner_idx` ON `grants` (`owner_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `policy_profiles` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`version` integer NOT NULL,
	`rules` text NOT NULL,
	`denies` text NOT NULL,
	`hash` text NOT NULL,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `policy_profiles_name_version` ON `policy_profiles` (`name`,`version`);--> statement-breakpoint
CREATE TABLE `schedules` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`created_by` text NOT NULL,
	`cron` text NOT NULL,
	`intent` text NOT NULL,
	`profile_id` text NOT NULL,
	`origins` text NOT NULL,
	`tool_versions` text NOT NULL,
	`policy_profile` text NOT NULL,
	`deadline_ms` integer NOT NULL,
	`enabled` integer DEFAULT true NOT NULL,
	`last_fired_for` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `schedules_enabled_idx` ON `schedules` (`enabled`);--> statement-breakpoint
ALTER TABLE `runs` ADD `kind` text DEFAULT 'interactive' NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `schedule_id` text;--> statement-breakpoint
ALTER TABLE `runs` ADD `policy_profile` text DEFAULT 'default' NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `pinned_versions` text;--> statement-breakpoint
ALTER TABLE `runs` ADD `claim_expires_at` integer;--> statement-breakpoint
ALTER TABLE `runs` ADD `latest_url` text;