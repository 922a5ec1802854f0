-- GET /api/connections pages a space's connections oldest first, keyed on (created_at, id).
CREATE INDEX "integration_connections_page_idx" ON "integration_connections" USING btree ("org_id","space_id","created_at","id");
