// Character classes for the ASCII console (no locales).
#pragma once

int isdigit(int c);
int isxdigit(int c);
int isspace(int c);
int isalpha(int c);
int isalnum(int c);
int isupper(int c);
int islower(int c);
int isprint(int c);
int toupper(int c);
int tolower(int c);
