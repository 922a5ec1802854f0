// Checkpoints of the agent loop: after each completed step the conversation so far and the
// workspace files changed since the start go to the sidecar, which has the platform keep them; a
// resumed run reads the one it starts from. Files are judged changed by size and modification
// time against the workspace as the run found it; those a resume restored stay counted as
// changed, so each checkpoint holds everything the agent changed since the first run began.
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelMessage } from 'ai';
import {
  MAX_CHECKPOINT_FILE_BYTES,
  MAX_CHECKPOINT_FILES,
  MAX_CHECKPOINT_MESSAGE_BYTES,
  type CheckpointFile,
  type PendingToolCall,
} from '../lib/run-checkpoints.ts';

/** Most entries walked in the workspace per checkpoint: a huge tree is not listed every step. */
const MAX_WALK_ENTRIES = 20_000;

export interface ResumePoint {
  step: number;
  messages: ModelMessage[];
  /** workspace paths the checkpoint restored (changed since the first run's start) */
  files: string[];
  /** paths of the start's workspace the agent had removed */
  removed: string[];
  /** a parked run's calls still without a result: made before the model is asked again */
  pending?: PendingToolCall[];
}

type Listing = Map<string, { size: number; mtimeMs: number }>;

async function listWorkspace(root: string): Promise<Listing> {
  const out: Listing = new Map();
  let walked = 0;
  async function walk(rel: string): Promise<void> {
    let entries;
    try {
      entries = await readdir(join(root, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (++walked > MAX_WALK_ENTRIES) return;
      const path = rel === '' ? e.name : `${rel}/${e.name}`;
      // links are not followed (they may point out of the workspace) nor carried
      if (e.isDirectory()) await walk(path);
      else if (e.isFile()) {
        const stat = await lstat(join(root, path)).catch(() => null);
        if (stat?.isFile()) out.set(path, { size: stat.size, mtimeMs: stat.mtimeMs });
      }
    }
  }
  await walk('');
  return out;
}

/** The checkpoint a resumed run starts from; null when it starts afresh. Throws when it cannot be read: never start over silently. */
export async function readResumePoint(sidecarUrl: string, sidecarFetch: typeof fetch): Promise<ResumePoint | null> {
  const res = await sidecarFetch(`${sidecarUrl}/runtime/checkpoint`, { signal: AbortSignal.timeout(120_000) });
  if (res.status === 204 || res.status === 404) {
    await res.arrayBuffer();
    return null;
  }
  if (res.status !== 200) throw new Error(`the checkpoint to resume from could not be read (status ${res.status})`);
  const body = (await res.json()) as Partial<ResumePoint>;
  if (!Number.isInteger(body.step) || !Array.isArray(body.messages)) throw new Error('the checkpoint to resume from is malformed');
  return { step: body.step!, messages: body.messages, files: body.files ?? [], removed: body.removed ?? [], pending: Array.isArray(body.pending) ? body.pending : [] };
}

export class CheckpointRecorder {
  private start: Listing = new Map();
  private step: number;

  constructor(
    private readonly opts: { workspace: string; sidecarUrl: string; fetch: typeof fetch; resumed: ResumePoint | null },
  ) {
    this.step = opts.resumed?.step ?? 0;
  }

  /** Steps completed so far, across resumes. */
  get completedSteps(): number {
    return this.step;
  }

  /** Notes the workspace as the run finds it (before the agent's first step). */
  async begin(): Promise<void> {
    this.start = await listWorkspace(this.opts.workspace);
    // restored files are the agent's changes, not materials: they are carried in every checkpoint
    for (const path of this.opts.resumed?.files ?? []) this.start.delete(path);
  }

  /** Records one completed step; false when the sidecar did not have it kept (the run goes on). */
  async record(messages: ModelMessage[]): Promise<boolean> {
    this.step += 1;
    const body = await this.body(messages);
    return body !== null && this.post('/runtime/checkpoint', body);
  }

  /**
   * Hands the sidecar the state of a model turn whose calls are outstanding (one waits for a
   * person's decision): the conversation with the turn's assistant message and the results already
   * in, the workspace, the calls still waiting. The sidecar posts it as the run's checkpoint if the
   * run is parked; the step is the last completed one.
   */
  async recordPending(messages: ModelMessage[], pending: PendingToolCall[]): Promise<boolean> {
    const body = await this.body(messages, pending);
    return body !== null && this.post('/runtime/pending', body);
  }

  private async body(messages: ModelMessage[], pending?: PendingToolCall[]): Promise<string | null> {
    const conversation = JSON.stringify(messages);
    if (Buffer.byteLength(conversation) > MAX_CHECKPOINT_MESSAGE_BYTES) return null;
    const now = await listWorkspace(this.opts.workspace);
    const changed = [...now].filter(([path, s]) => {
      const before = this.start.get(path);
      return !before || before.size !== s.size || before.mtimeMs !== s.mtimeMs;
    }).map(([path]) => path).sort();
    const removed = new Set([...this.start.keys()].filter((p) => !now.has(p)));
    for (const p of this.opts.resumed?.removed ?? []) if (!now.has(p)) removed.add(p);

    const files: CheckpointFile[] = [];
    let bytes = 0;
    let truncated = false;
    for (const path of changed) {
      const size = now.get(path)!.size;
      if (files.length >= MAX_CHECKPOINT_FILES || bytes + size > MAX_CHECKPOINT_FILE_BYTES) {
        truncated = true;
        continue;
      }
      const content = await readFile(join(this.opts.workspace, path)).catch(() => null);
      if (!content) continue;
      bytes += content.length;
      files.push({ path, content: content.toString('base64') });
    }
    // the step is at least 1: a run parked in its first turn resumes from its first step's start
    return `{"step":${Math.max(1, this.step)},"messages":${conversation},"files":${JSON.stringify(files)},"removed":${JSON.stringify([...removed].sort())}${truncated ? ',"truncated":true' : ''}${pending ? `,"pending":${JSON.stringify(pending)}` : ''}}`;
  }

  private async post(path: string, body: string): Promise<boolean> {
    try {
      const res = await this.opts.fetch(`${this.opts.sidecarUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(120_000),
      });
      await res.arrayBuffer();
      return res.status === 204;
    } catch {
      return false;
    }
  }
}
