// The checkpoint a run's agent records after each completed step, as it travels from the agent
// runtime through its sidecar to the platform, and the bounds every hop holds it to.

/** Most workspace files one checkpoint carries; files past it are left out (the checkpoint says so). */
export const MAX_CHECKPOINT_FILES = 100;
/** Most bytes of workspace files one checkpoint carries (before base64). */
export const MAX_CHECKPOINT_FILE_BYTES = 8 * 1024 * 1024;
/** Most bytes of the conversation (as JSON) one checkpoint carries; a longer one is not recorded. */
export const MAX_CHECKPOINT_MESSAGE_BYTES = 8 * 1024 * 1024;
/** The largest checkpoint body: the conversation plus the files in base64, with room for the framing. */
export const MAX_CHECKPOINT_BODY_BYTES = MAX_CHECKPOINT_MESSAGE_BYTES + Math.ceil(MAX_CHECKPOINT_FILE_BYTES / 3) * 4 + 1024 * 1024;
const MAX_PATH_CHARS = 1024;

/** A file of the workspace as the checkpoint carries it: relative path, bytes in base64. */
export interface CheckpointFile {
  path: string;
  content: string;
}

/** A tool call of the last model turn still waiting for its result when the run parked (a person's decision, most often). */
export interface PendingToolCall {
  tool_call_id: string;
  tool_name: string;
  input: unknown;
}

/** Most pending calls one checkpoint carries (one model turn's tool calls). */
export const MAX_PENDING_CALLS = 64;

export interface CheckpointState {
  /** steps completed since the first run's start (a model turn with its tool results), counted across resumes */
  step: number;
  /** the conversation after that step, as the agent loop keeps it (system prompt excluded) */
  messages: unknown[];
  /** workspace files created or changed since the start (not the agent's materials as given) */
  files: CheckpointFile[];
  /** paths of the start's workspace the agent removed */
  removed: string[];
  /** true when changed files were left out for the bounds above */
  truncated?: boolean;
  /**
   * a parked run's checkpoint only: the calls of the last model turn without a result yet (its
   * assistant message is the last of `messages` but for the results already in); the woken run makes
   * them (a gated one takes the decision made meanwhile) before the model is asked again
   */
  pending?: PendingToolCall[];
}

/** A relative path inside the workspace: no absolute path, no `..`, no empty segment, no NUL. */
export function isWorkspaceRelativePath(path: unknown): path is string {
  if (typeof path !== 'string' || path === '' || path.length > MAX_PATH_CHARS || path.includes('\0') || path.includes('\\')) return false;
  if (path.startsWith('/')) return false;
  return path.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..');
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Checks a checkpoint body; the error names what is wrong, never the content. */
export function parseCheckpointState(body: unknown): CheckpointState {
  const fail = (message: string): never => {
    throw new Error(`invalid checkpoint: ${message}`);
  };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) fail('the body must be an object');
  const b = body as Record<string, unknown>;
  if (!Number.isInteger(b.step) || (b.step as number) < 1 || (b.step as number) > 100_000) fail('step must be a positive integer');
  if (!Array.isArray(b.messages) || b.messages.length === 0) fail('messages must be a non-empty array');
  if (!(b.messages as unknown[]).every((m) => typeof m === 'object' && m !== null && typeof (m as { role?: unknown }).role === 'string')) {
    fail('each message must be an object with a role');
  }
  const files = b.files ?? [];
  if (!Array.isArray(files) || files.length > MAX_CHECKPOINT_FILES) fail(`files must be an array of at most ${MAX_CHECKPOINT_FILES}`);
  let bytes = 0;
  const seen = new Set<string>();
  for (const f of files as unknown[]) {
    const file = f as Partial<CheckpointFile> | null;
    if (!file || !isWorkspaceRelativePath(file.path)) fail('each file needs a relative path inside the workspace');
    if (typeof file!.content !== 'string' || !BASE64.test(file!.content)) fail('each file needs its content in base64');
    if (seen.has(file!.path!)) fail('a path appears twice');
    seen.add(file!.path!);
    bytes += Math.floor((file!.content!.length * 3) / 4);
  }
  if (bytes > MAX_CHECKPOINT_FILE_BYTES + 2 * MAX_CHECKPOINT_FILES) fail(`files may hold at most ${MAX_CHECKPOINT_FILE_BYTES} bytes`);
  const removed = b.removed ?? [];
  if (!Array.isArray(removed) || removed.length > 10_000 || !removed.every(isWorkspaceRelativePath)) fail('removed must be an array of relative paths');
  const pending = b.pending ?? [];
  if (!Array.isArray(pending) || pending.length > MAX_PENDING_CALLS) fail(`pending must be an array of at most ${MAX_PENDING_CALLS} calls`);
  for (const p of pending as unknown[]) {
    const call = p as Partial<PendingToolCall> | null;
    if (!call || typeof call !== 'object' || typeof call.tool_call_id !== 'string' || call.tool_call_id === '' || call.tool_call_id.length > 200
      || typeof call.tool_name !== 'string' || call.tool_name === '' || call.tool_name.length > 200) {
      fail('each pending call needs a tool_call_id and a tool_name');
    }
  }
  return {
    step: b.step as number,
    messages: b.messages as unknown[],
    files: (files as CheckpointFile[]).map((f) => ({ path: f.path, content: f.content })),
    removed: removed as string[],
    ...(b.truncated === true ? { truncated: true } : {}),
    ...((pending as unknown[]).length > 0
      ? { pending: (pending as PendingToolCall[]).map((c) => ({ tool_call_id: c.tool_call_id, tool_name: c.tool_name, input: c.input ?? {} })) }
      : {}),
  };
}
