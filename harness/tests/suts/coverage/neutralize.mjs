export function neutralize(text) {
  const lines = [];
  for (let line of text.split("\n")) {
    if (line.startsWith("MEDIA:")) {
      line = `[neutralized] ${line}`;
    }
    lines.push(line);
  }
  return lines.join("\n");
}
