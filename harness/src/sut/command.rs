//! The SUT command line, split into an argv list without a shell.

use anyhow::{Result, anyhow, bail};

/// Minimal POSIX-style word splitting: whitespace separates words, single quotes are literal,
/// double quotes and backslashes escape. Enough for `node my-shim.mjs --flag "a b"`.
pub(super) fn shell_words(command: &str) -> Result<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => bail!("unterminated ' in SUT command"),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => w.push(
                            chars
                                .next()
                                .ok_or_else(|| anyhow!("trailing \\ in SUT command"))?,
                        ),
                        Some(c) => w.push(c),
                        None => bail!("unterminated \" in SUT command"),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(
                chars
                    .next()
                    .ok_or_else(|| anyhow!("trailing \\ in SUT command"))?,
            ),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    if words.is_empty() {
        bail!("the SUT command is empty");
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_commands() {
        assert_eq!(shell_words("node shim.mjs").unwrap(), ["node", "shim.mjs"]);
        assert_eq!(
            shell_words(r#"python3 -c 'print(1)' "a b" c\ d"#).unwrap(),
            ["python3", "-c", "print(1)", "a b", "c d"]
        );
        assert!(shell_words("  ").is_err());
        assert!(shell_words("'open").is_err());
    }
}
