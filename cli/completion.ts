// Shell completion scripts, made from the command table: command words, then the flags of the
// command typed so far (and the global flags), run statuses after --status, files after the
// flags and commands that take one.
import type { Command } from './main.ts';

const FILE_FLAGS = ['--input-file', '--output'];
const STATUSES = 'pending running success failed timeout cancelled';

function table(commands: Command[], globals: string[]) {
  const top = [...new Set(commands.map((c) => c.words[0])), 'help'];
  const subs = new Map<string, string[]>();
  const flags = new Map<string, string[]>();
  for (const c of commands) {
    if (c.words.length > 1) subs.set(c.words[0], [...(subs.get(c.words[0]) ?? []), c.words[1]]);
    flags.set(c.words.join(' '), [...c.flags, ...globals].map((f) => `--${f}`));
  }
  return { top, subs, flags };
}

export function completionScript(shell: 'bash' | 'zsh', commands: Command[], globals: string[]): string {
  const { top, subs, flags } = table(commands, globals);
  const subCases = [...subs].map(([w, s]) => `    ${w}) echo "${s.join(' ')}" ;;`).join('\n');
  const flagCases = [...flags].map(([w, f]) => `    "${w}") echo "${f.join(' ')}" ;;`).join('\n');
  const shared = `
_agent_platform_subs() {
  case "$1" in
${subCases}
  esac
}
_agent_platform_flags() {
  case "$1" in
${flagCases}
    *) echo "${globals.map((g) => `--${g}`).join(' ')}" ;;
  esac
}
_agent_platform_words() {
  # the command typed so far, without flags and their values
  local w skip=0 out=()
  for w in "$@"; do
    if [ $skip = 1 ]; then skip=0; continue; fi
    case "$w" in
      --json|--wait|--follow|-f|--help|-h) ;;
      --*=*) ;;
      --*) skip=1 ;;
      *) out+=("$w") ;;
    esac
  done
  echo "\${out[*]}"
}
`;
  if (shell === 'bash') {
    return `# agent-platform completion for bash: eval "$(agent-platform completion bash)"
${shared}
_agent_platform() {
  local cur prev words cmd
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  case "$prev" in
    ${FILE_FLAGS.join('|')}) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --status) COMPREPLY=($(compgen -W "${STATUSES}" -- "$cur")); return ;;
  esac
  words=($(_agent_platform_words "\${COMP_WORDS[@]:1:COMP_CWORD-1}"))
  if [[ "$cur" == -* ]]; then
    cmd="\${words[0]} \${words[1]}"
    local f; f="$(_agent_platform_flags "\${cmd% }")"
    [ -z "$f" ] || [ "$f" = "$(_agent_platform_flags "")" ] && f="$(_agent_platform_flags "\${words[0]}")"
    COMPREPLY=($(compgen -W "$f" -- "$cur"))
  elif [ \${#words[@]} -eq 0 ]; then
    COMPREPLY=($(compgen -W "${top.join(' ')}" -- "$cur"))
  elif [ \${#words[@]} -eq 1 ] && [ -n "$(_agent_platform_subs "\${words[0]}")" ]; then
    COMPREPLY=($(compgen -W "$(_agent_platform_subs "\${words[0]}")" -- "$cur"))
  elif [ "\${words[0]}" = completion ]; then
    COMPREPLY=($(compgen -W "bash zsh" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o default -F _agent_platform agent-platform
`;
  }
  return `#compdef agent-platform
# agent-platform completion for zsh: eval "$(agent-platform completion zsh)" (after compinit),
# or save as _agent-platform in a folder of $fpath
${shared}
_agent_platform() {
  local -a words_ cands
  local cur="\${words[CURRENT]}" prev="\${words[CURRENT-1]}" cmd
  case "$prev" in
    ${FILE_FLAGS.join('|')}) _files; return ;;
    --status) cands=(${STATUSES}); compadd -- $cands; return ;;
  esac
  words_=($(_agent_platform_words "\${(@)words[2,CURRENT-1]}"))
  if [[ "$cur" == -* ]]; then
    cmd="\${words_[1]} \${words_[2]}"
    local f; f="$(_agent_platform_flags "\${cmd% }")"
    [[ -z "$f" || "$f" == "$(_agent_platform_flags "")" ]] && f="$(_agent_platform_flags "\${words_[1]}")"
    cands=(\${=f}); compadd -- $cands
  elif (( \${#words_} == 0 )); then
    cands=(${top.join(' ')}); compadd -- $cands
  elif (( \${#words_} == 1 )) && [[ -n "$(_agent_platform_subs "\${words_[1]}")" ]]; then
    cands=(\${=$(_agent_platform_subs "\${words_[1]}")}); compadd -- $cands
  elif [[ "\${words_[1]}" == completion ]]; then
    compadd -- bash zsh
  else
    _files
  fi
}
if (( $+functions[compdef] )); then compdef _agent_platform agent-platform; fi
`;
}
