import './polyfill.ts';
import * as restate from '@restatedev/restate-sdk';
import { InvocationIdParser, TerminalError, type ObjectContext, type RunOptions } from '@restatedev/restate-sdk';
import { nextFireAfter } from '../lib/schedule-cron.ts';
import { SCHEDULE_OBJECT_NAME, type ArmRequest, type FireRequest, type FireResult, type ScheduleActivities, type ScheduleView } from './schedule-types.ts';

/** A refused fire is retried within its tick for at most this long (and never past the next tick). */
const RETRY_WINDOW_MS = 10 * 60_000;
/** Ticks missed by more than this (the engine was down) are not replayed one after another. */
const CATCH_UP_MS = 5 * 60_000;
/** Invocation id of the fire armed for the next tick, cancelled when the schedule is re-armed. */
const PENDING = 'pending';
const FIRE_RETRY: RunOptions<FireResult> = { maxRetryDuration: 15 * 60_000, initialRetryInterval: 500, maxRetryInterval: 30_000 };

/**
 * The schedule's durable clock, one virtual object per schedule id. `arm` (after a create or a
 * change of cron, zone or enabled) cancels the armed fire and arms one at next_run_at; `fire`
 * arms the following tick first, then launches this one (at most one run per tick: the launch is
 * keyed by schedule and tick). The database's generation decides: a fire armed for an older
 * generation does nothing.
 */
export function createScheduleObject(activities: ScheduleActivities) {
  async function armFire(ctx: ObjectContext, view: ScheduleView, fireAt: string): Promise<void> {
    const now = await ctx.date.now();
    const next = Date.parse(fireAt);
    const request: FireRequest = { generation: view.generation, fireAt, attempt: 1, until: new Date(next + RETRY_WINDOW_MS).toISOString() };
    const handle = ctx.objectSendClient(scheduleObject, ctx.key).fire(request, restate.rpc.sendOpts({ delay: Math.max(0, next - now) }));
    ctx.set(PENDING, await handle.invocationId);
  }

  /** Cancels the fire armed for the next tick, unless it is the invocation running now. */
  async function cancelArmed(ctx: ObjectContext): Promise<void> {
    const pending = await ctx.get<string>(PENDING);
    if (!pending) return;
    if (pending !== String(ctx.request().id)) ctx.invocation(InvocationIdParser.fromString(pending)).cancel();
    ctx.clear(PENDING);
  }

  const scheduleObject = restate.object({
    name: SCHEDULE_OBJECT_NAME,
    handlers: {
      async arm(ctx: ObjectContext, request: ArmRequest): Promise<void> {
        const view = await ctx.run('read', () => activities.view(ctx.key));
        // An arm for a newer generation is on its way (or came first): it decides.
        if (view && view.generation > request.generation) return;
        await cancelArmed(ctx);
        if (!view) return;
        if (view.enabled && view.nextRunAt) await armFire(ctx, view, view.nextRunAt);
        await ctx.run('armed', () => activities.markArmed(ctx.key, view.generation));
      },

      async fire(ctx: ObjectContext, request: FireRequest): Promise<void> {
        const view = await ctx.run('read', () => activities.view(ctx.key));
        if (!view || !view.enabled || view.generation !== request.generation) return;
        const now = await ctx.date.now();
        let until = request.until;
        // Only the fire of the tick the schedule waits for moves it on; a duplicate or late fire of
        // an earlier tick only makes sure that tick's run exists.
        if (request.attempt === 1 && view.nextRunAt === request.fireAt) {
          const next = await ctx.run('next tick', () => followingTick(view, request.fireAt, now));
          await ctx.run('advance', () => activities.advance(ctx.key, view.generation, next));
          await cancelArmed(ctx);
          await armFire(ctx, view, next);
          if (next < until) until = next;
        }
        const lastAttempt = now >= Date.parse(until);
        let result: FireResult;
        try {
          result = await ctx.run(`fire ${request.attempt}`, () => activities.fire(ctx.key, view.generation, request.fireAt, request.attempt, lastAttempt), FIRE_RETRY);
        } catch (err) {
          // Given up after the retries above: the next tick is armed already.
          if (err instanceof TerminalError) return;
          throw err;
        }
        if (result.outcome !== 'refused') return;
        const retryAt = Math.min(now + result.retryAfterMs, Date.parse(until));
        const retry: FireRequest = { ...request, attempt: request.attempt + 1, until };
        ctx.objectSendClient(scheduleObject, ctx.key).fire(retry, restate.rpc.sendOpts({ delay: Math.max(0, retryAt - now) }));
      },
    },
  });
  return scheduleObject;
}

/** The tick after `fireAt`; after an outage longer than CATCH_UP_MS, the first tick after now. */
export function followingTick(view: Pick<ScheduleView, 'cronExpression' | 'timezone'>, fireAt: string, now: number): string {
  let next = nextFireAfter(view.cronExpression, view.timezone, new Date(fireAt));
  if (next.getTime() < now - CATCH_UP_MS) next = nextFireAfter(view.cronExpression, view.timezone, new Date(now));
  return next.toISOString();
}

export type ScheduleObject = ReturnType<typeof createScheduleObject>;
