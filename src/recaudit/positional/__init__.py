"""recaudit.positional"""
