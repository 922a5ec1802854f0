// Per-space configuration of an agent: input fields locked to a value and the model it runs with.
import { z } from 'zod';
import { spaceScopeOf } from '../../db/tenant.ts';
import { problem } from '../../lib/problem.ts';
import { ok, route } from '../route.ts';
import { resolveRunnableAgent } from '../services/packages/dependencies.ts';
import { AgentParams, agentIdOf } from './run-schemas.ts';

const AgentConfig = z.object({
  packageId: z.string(),
  locked_input: z.record(z.string(), z.unknown()),
  model_id: z.string().nullable(),
}).meta({ id: 'AgentConfig' });

const isEmpty = (v: unknown) => v === null || v === undefined || v === '';

export const agentConfigRoutes = [
  route({
    method: 'get', path: '/api/agents/{scope}/{name}/config', summary: "Read the agent's configuration in this space", tag: 'Agents',
    permission: 'agents:read', params: AgentParams,
    responses: { 200: { description: 'The configuration', schema: AgentConfig } },
    handler: async ({ ctx, params, deps }) => {
      const scope = spaceScopeOf(ctx, deps.database);
      const agentId = agentIdOf(params);
      await resolveRunnableAgent(scope, agentId);
      const { rows } = await scope.pool.query('SELECT locked_input, model_id FROM agent_configs WHERE org_id = $1 AND space_id = $2 AND agent_id = $3', [scope.orgId, scope.spaceId, agentId]);
      return ok({ packageId: agentId, locked_input: rows[0]?.locked_input ?? {}, model_id: rows[0]?.model_id ?? null });
    },
  }),
  route({
    method: 'put', path: '/api/agents/{scope}/{name}/config', summary: "Lock input fields and choose the agent's model in this space", tag: 'Agents',
    permission: 'agents:configure', params: AgentParams,
    body: z.object({ locked_input: z.record(z.string(), z.unknown()).default({}), model_id: z.string().nullable().default(null) }).strict(),
    responses: { 200: { description: 'The configuration', schema: AgentConfig }, 400: { description: 'model_not_configured: model_id names no model of the organization' } },
    handler: async ({ ctx, params, body, deps }) => {
      const scope = spaceScopeOf(ctx, deps.database);
      const agentId = agentIdOf(params);
      const agent = await resolveRunnableAgent(scope, agentId);
      const required = new Set<string>(((agent.manifest.input?.schema as { required?: string[] } | undefined)?.required) ?? []);
      const emptyRequired = Object.entries(body.locked_input).filter(([k, v]) => required.has(k) && isEmpty(v)).map(([k]) => k);
      if (emptyRequired.length) {
        throw problem('locked_required_field_empty', {
          detail: `Required input field${emptyRequired.length > 1 ? 's' : ''} ${emptyRequired.join(', ')} cannot be locked without a value.`,
          errors: emptyRequired.map((k) => ({ field: `locked_input.${k}`, code: 'invalid_value', message: 'A required field needs a value to be locked.' })),
        });
      }
      if (body.model_id !== null) {
        const { rowCount } = await scope.pool.query('SELECT 1 FROM models WHERE id = $1 AND org_id = $2', [body.model_id, scope.orgId]);
        if (!rowCount) {
          throw problem('model_not_configured', {
            detail: `The organization has no model ${body.model_id}.`,
            errors: [{ field: 'model_id', code: 'invalid_value', message: 'Name a model of this organization (GET /api/models), or null for its default.' }],
          });
        }
      }
      await scope.pool.query(
        `INSERT INTO agent_configs (org_id, space_id, agent_id, locked_input, model_id) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (org_id, space_id, agent_id) DO UPDATE SET locked_input = EXCLUDED.locked_input, model_id = EXCLUDED.model_id, updated_at = now()`,
        [scope.orgId, scope.spaceId, agentId, JSON.stringify(body.locked_input), body.model_id],
      );
      return ok({ packageId: agentId, locked_input: body.locked_input, model_id: body.model_id });
    },
  }),
];
