"""judge: any load generator judged from the server's side (loadtests/judge.md).

judge_command.py  the options, the model, what the tool claims, the exit status
collect.py        the run: the notesd started (or a running one), the load (a command, an
                  adapter's tool, a window), the journal read as it goes
judge_figures.py  the run's figures from the journal's columns, its checks (judgement.py's),
                  and the series the page draws
page.py           the summary on stdout and the HTML page
"""
