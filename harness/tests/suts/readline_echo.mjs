// A shim built on Node's readline, as SUT authors write them: one request per line event.
// A request split by the line reader (at U+2028, U+2029 or a lone \r) fails to parse, and the
// answer then carries no id: the harness sees a protocol fault instead of the echo.
import readline from 'node:readline';

const write = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
write({normfuzz: 1, name: 'readline echo', ops: ['neutralize_text']});
const lines = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
lines.on('line', (line) => {
  let request;
  try {
    request = JSON.parse(line);
  } catch (e) {
    write({id: null, error: `not one request per line: ${e.message}`});
    return;
  }
  write({id: request.id, output: {text: request.input.text}});
});
