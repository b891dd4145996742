// A SUT shim written the obvious way, over the reference: Node's `readline` reads the requests
// and each line goes, as read, to `normfuzz serve-reference`, whose answers are passed through.
// Node 24's readline ends a line at U+2028 and U+2029 too; were a request not escaped, its
// pieces would reach the reference as broken lines and the campaign would report protocol
// faults. `cargo xtask ci` runs a campaign through this shim on the Node the e2e runtime installs.
//
// Usage: node readline_reference.mjs /path/to/normfuzz
import {spawn} from 'node:child_process';
import readline from 'node:readline';

const normfuzz = process.argv[2];
if (!normfuzz) {
  process.stderr.write('usage: node readline_reference.mjs /path/to/normfuzz\n');
  process.exit(2);
}
const reference = spawn(normfuzz, ['serve-reference'], {stdio: ['pipe', 'pipe', 'inherit']});
reference.stdout.pipe(process.stdout);
reference.on('exit', (code) => process.exit(code ?? 1));
const lines = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
lines.on('line', (line) => reference.stdin.write(line + '\n'));
lines.on('close', () => reference.stdin.end());
