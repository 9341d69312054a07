CREATE TABLE `mcp_clients` (
	`principal_id` text PRIMARY KEY NOT NULL,
	`url_elicitation` integer NOT NULL,
	`protocol_version` text NOT NULL,
	`client_name` text,
	`updated_at` integer NOT NULL
);
