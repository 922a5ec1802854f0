-- An integration that declares no auths (a public remote MCP server) is part of a run without a
-- connection: its run_connections row pins the version with auth_key and connection_id both null.
ALTER TABLE "run_connections" ALTER COLUMN "auth_key" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "run_connections" ALTER COLUMN "connection_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "run_connections" ADD CONSTRAINT "run_connections_connection_with_auth" CHECK (("auth_key" IS NULL) = ("connection_id" IS NULL));
