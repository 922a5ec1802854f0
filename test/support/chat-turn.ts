// Reading a chat turn as a client does: POST the message, read the text/event-stream to its end,
// and split it into frames (event name and parsed data).
export interface TurnFrame {
  event: string;
  data: any;
}

export interface TurnAnswer {
  status: number;
  headers: Headers;
  frames: TurnFrame[];
  /** the problem document when the turn was refused before streaming */
  problem: any;
  text: string;
}

export function parseEventStream(text: string): TurnFrame[] {
  const frames: TurnFrame[] = [];
  for (const block of text.split('\n\n')) {
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).trim());
    }
    if (data.length) frames.push({ event, data: JSON.parse(data.join('\n')) });
  }
  return frames;
}

export async function postTurn(base: string, sessionId: string, content: string, headers: Record<string, string>, signal?: AbortSignal): Promise<TurnAnswer> {
  const res = await fetch(`${base}/api/chat/sessions/${sessionId}/messages`, {
    method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ content }), signal,
  });
  const text = await res.text();
  const isStream = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
  return { status: res.status, headers: res.headers, frames: isStream ? parseEventStream(text) : [], problem: isStream ? null : JSON.parse(text), text };
}

/** The streamed answer's text: its token events joined. */
export const streamedText = (frames: TurnFrame[]) => frames.filter((f) => f.event === 'token').map((f) => f.data.text).join('');
