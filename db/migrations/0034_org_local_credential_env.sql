-- An organization's admins may let local MCP servers receive their connection's credential in their
-- environment (an integration auth's delivery.env); off until they do.
ALTER TABLE "organizations" ADD COLUMN "local_credential_env" boolean DEFAULT false NOT NULL;
