// A run's status in words with a symbol: colour only repeats what the text says.
const SYMBOL: Record<string, string> = { pending: '○', running: '◐', success: '✓', failed: '✕', timeout: '⧗', cancelled: '⊘' };

export function RunStatus({ status }: { status: string }) {
  return (
    <span class={`status status-${status}`}>
      <span aria-hidden="true">{SYMBOL[status] ?? '•'} </span>{status}
    </span>
  );
}

export const TERMINAL = new Set(['success', 'failed', 'timeout', 'cancelled']);
