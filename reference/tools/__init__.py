"""The single-file tools: Read, Write (atomic publish), Edit and notebook edits."""
