"""recaudit.fairness"""
