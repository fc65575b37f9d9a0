"""The fuzz properties: one module per family, each a strategy of cases plus a relational check.

`base.all_properties()` lists them in campaign order; `case`, `executor`, `endpoints` and
`judging` are the machinery they share with the campaign runner and `mcp-tempest replay`.
"""
