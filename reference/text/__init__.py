"""Text and encodings: decoding, re-encoding, newline styles, unified diffs, the content memo."""
