#pragma once
void pic_disable(void); // remap and mask both 8259s
