"""The words postmortem writes: formatters, Markdown escaping and the template environment.

Everything that turns a number, a time or a finding into text lives here, so the analysis and
the report say the same thing the same way:

* :mod:`.formats` — durations, sizes, numbers, clock offsets and times (also the Jinja filters);
* :mod:`.markdown` — escaping of untrusted text for Markdown cells, inline text and code;
* :mod:`.templates` — the Jinja environment (packaged templates, a user's directory searched
  first) and the rendering of a rule's finding through ``templates/rules/<name>.md.j2``.

Nothing here imports the analysis or the report.
"""
