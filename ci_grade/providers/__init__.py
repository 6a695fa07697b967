"""Providers: the models under test and the graders, behind one interface."""
