"""The Chinese edition's maintainer tools: which English texts each catalog translates (sources),
where each Chinese file lives and how it is built (edition), what a translation must keep of its
English (compare), and every problem the tests report (check). The command line:
`python -m labkit.course.translation sync|build|check|stamp` (CONTRIBUTING.md, "The Chinese edition").

What a learner's notebook needs at run time, the language and `tr`, is `labkit.i18n`; the catalog
format both read is `labkit/i18n/catalog.py`.
"""
