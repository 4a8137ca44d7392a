"""Evaluation over QA files: Hits@1/20, F1, linking accuracy, cost, reports and plots."""
