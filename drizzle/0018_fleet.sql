CREATE TABLE `hosts` (
	`id` text PRIMARY KEY NOT NULL,
	`url` text NOT NULL,
	`source` text NOT NULL,
	`label` text DEFAULT '' NOT NULL,
	`state` text DEFAULT 'healthy' NOT NULL,
	`reported_host_id` text,
	`version` text,
	`max_browsers` integer DEFAULT 3 NOT NULL,
	`browsers` integer DEFAULT 0 NOT NULL,
	`leases` integer DEFAULT 0 NOT NULL,
	`ceremonies` integer DEFAULT 0 NOT NULL,
	`failed_checks` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	`checked_at` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `hosts_url_unique` ON `hosts` (`url`);--> statement-breakpoint
CREATE TABLE `profile_placements` (
	`host_profile_id` text PRIMARY KEY NOT NULL,
	`host_id` text NOT NULL,
	`generation` integer NOT NULL,
	`reason` text NOT NULL,
	`previous_host_id` text,
	`placed_at` integer NOT NULL,
	`used_at` integer
);
--> statement-breakpoint
CREATE INDEX `profile_placements_host_idx` ON `profile_placements` (`host_id`);--> statement-breakpoint
CREATE TABLE `profile_snapshots` (
	`host_profile_id` text NOT NULL,
	`version` integer NOT NULL,
	`generation` integer NOT NULL,
	`host_id` text NOT NULL,
	`store_key` text NOT NULL,
	`digest` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`refused_reason` text,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`host_profile_id`, `version`)
);
--> statement-breakpoint
ALTER TABLE `runs` ADD `lease_host_id` text;--> statement-breakpoint
ALTER TABLE `runs` ADD `lease_host_url` text;--> statement-breakpoint
CREATE INDEX `runs_lease_host_idx` ON `runs` (`lease_host_id`,`lease_expires_at`);