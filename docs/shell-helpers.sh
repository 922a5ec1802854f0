# The helpers of the first run (docs/integrators.md, "A first run by hand"), for a shell kept open
# for the guides: `. docs/shell-helpers.sh` from the repository folder, with B set to the
# platform's address. test/e2e/docs-blocks.test.ts checks they are the walkthrough's, line for line.
# ask METHOD PATH [curl options]: prints the answer's body; an answer other than 2xx is shown and stops
ask() { m=$1; p=$2; shift 2; curl -sS -X "$m" "$B$p" -w '\n%{http_code}' "$@" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const i=s.lastIndexOf("\n"),c=s.slice(i+1);if(c[0]==="2"){console.log(s.slice(0,i));return}console.error(`${process.argv[1]} answered ${c}: ${s.slice(0,i)}`);process.exit(1)})' "$m $p"; }
# field NAME: the member NAME of the JSON document on stdin
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{if(!s)process.exit(1);const v=JSON.parse(s)[process.argv[1]];if(v===undefined){console.error(`no ${process.argv[1]} in ${s}`);process.exit(1)}console.log(v)})' "$1"; }
