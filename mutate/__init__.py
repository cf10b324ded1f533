"""Mutation testing of the ``hw/`` sources against the default simulation regression
(``python -m mutate``, ``make mutate``): how good the regression is at finding bugs.

* :mod:`~mutate.operators` -- the single-point source changes (``ast``);
* :mod:`~mutate.sample` -- stratified, seeded sampling per file;
* :mod:`~mutate.regression` -- the default configurations and which ``hw`` files they use;
* :mod:`~mutate.sandbox` -- the throwaway repository copy mutants run in;
* :mod:`~mutate.campaign` -- classification of each mutant and the reports.
"""
