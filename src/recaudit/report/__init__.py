"""recaudit.report"""
