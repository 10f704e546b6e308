"""Load-tool adapters: one module per tool, each turning a RunSpec into the
tool's command line and the tool's own output into one ToolResult."""
